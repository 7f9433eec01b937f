/// Proposes the tokens likely to follow a sequence, for speculative decoding to check in one
/// pass (`TokenPredictor.verify`). A drafter only guesses: a wrong guess costs a wider pass,
/// never a different answer. Each job gets its own (`Speculation.makeDrafter`), so a drafter may
/// keep state between a job's steps (a draft model's KV cache); it runs on the engine's thread.
public protocol Drafter {
    /// Up to `limit` tokens to follow `history` (the prompt and the answer so far), empty when it
    /// has no guess.
    mutating func draft(after history: ArraySlice<Int32>, limit: Int) -> [Int32]
}
