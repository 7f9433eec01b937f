import Engine

/// The model as a session needs it. `InferenceEngine` is the real one; tests supply a tiny
/// deterministic model over the same `GenerationRunner`, so cancellation behaves the same.
public protocol SessionModel: Sendable {
    var contextLength: Int { get }
    /// Bytes of KV cache one token of a sequence holds (for the memory budget).
    var kvBytesPerToken: Int { get }
    /// The prompt for a conversation, ending with the cue for the assistant's answer. Throws
    /// when the model has no chat template or the template cannot render the conversation.
    func promptTokens(for messages: [ChatMessage]) throws(ChatTemplateError) -> [Int32]
    func makeSequence(capacity: Int) -> any PredictorSequence
    /// Returns only once the engine has stopped working on the request.
    func generate(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> GenerationResult
}

extension InferenceEngine: SessionModel {
    /// Keys and values, f16, for every layer.
    public var kvBytesPerToken: Int { 2 * model.config.blockCount * model.config.kvDim * 2 }

    public func makeSequence(capacity: Int) -> any PredictorSequence {
        model.makeSequence(capacity: capacity)
    }
}
