import GenerationVocabulary

/// The optional capability of a backend to keep a sequence's KV cache between turns, so a
/// session's next turn computes only what is new.
public protocol KVCacheCapability: Sendable {
    /// Bytes of KV cache one token of a sequence holds (for the memory budget).
    var kvBytesPerToken: Int { get }
    func makeSequence(capacity: Int) -> any PredictorSequence
}
