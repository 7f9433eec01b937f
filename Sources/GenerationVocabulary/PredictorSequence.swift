/// One sequence's state inside a predictor (its KV cache): the tokens it has seen.
public protocol PredictorSequence: AnyObject, Sendable {
    var count: Int { get }
    var capacity: Int { get }
    var tokens: [Int32] { get }
    /// Forgets everything after the first `length` tokens (rolls back a cancelled turn,
    /// or keeps the shared prefix of the next prompt).
    func truncate(to length: Int)
}
