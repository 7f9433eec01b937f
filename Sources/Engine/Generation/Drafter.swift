/// Proposes the tokens likely to follow a sequence, for speculative decoding to check in one
/// pass (`TokenPredictor.verify`). A drafter only guesses: a wrong guess costs a wider pass,
/// never a different answer.
public protocol Drafter: Sendable {
    /// Up to `limit` tokens to follow `history` (the prompt and the answer so far), empty when it
    /// has no guess.
    func draft(after history: ArraySlice<Int32>, limit: Int) -> [Int32]
}
