import CKernels

/// The numeric model as generation sees it: tokens in, next-token logits out.
///
/// `LlamaModel` is the production predictor; tests can supply a tiny deterministic one to
/// exercise generation, stop handling and cancellation without a model file.
public protocol TokenPredictor: AnyObject, Sendable {
    var vocabularySize: Int { get }
    var contextLength: Int { get }
    /// A new, empty per-sequence state (the KV cache) holding up to `capacity` tokens.
    func makeSequence(capacity: Int) -> any PredictorSequence
    /// Appends `tokens` to `sequence` and writes the logits after the last one into `logits`.
    /// Synchronous and compute-bound: call it only from the engine's own threads. A slice, so a
    /// decode step can pass the last token of a sequence's history without building an array.
    func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws
    /// `predict` for a piece of a prompt of `promptLength` tokens, whose indices are the
    /// positions in it (the piece's arithmetic may depend on where it lies in the whole, as a
    /// scored piece's does): a prompt fed in pieces then gives the bits of the whole in one call.
    func predict(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, sequence: any PredictorSequence,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws
    func predict(batch: [PredictionInput]) throws
    /// Appends `tokens` to `sequence` like `predict`, and writes the logits after every one of
    /// them into `rows` ([tokens.count × vocabularySize], row t after token t): scoring a prompt
    /// (completions' `echo`) in its own pass, with no second forward. `tokens` is a piece of a
    /// prompt of `promptLength` tokens, its indices the positions in it (the piece's arithmetic
    /// may depend on where it lies in the whole). `normalizers[t]` gets row t's log Σ exp.
    func score(
        tokens: ArraySlice<Int32>, promptLength: Int, sequence: any PredictorSequence,
        rows: UnsafeMutableBufferPointer<Float>, normalizers: UnsafeMutableBufferPointer<Float>
    ) throws
    /// Appends `tokens` to `sequence` as decode steps and writes the logits after every one
    /// of them into `rows` ([tokens.count × vocabularySize]), each exactly what `predict` gives
    /// after that token when the tokens are fed one at a time: drafted tokens are checked in one
    /// pass (speculative decoding) and the answer is the one plain decoding gives.
    func verify(tokens: ArraySlice<Int32>, sequence: any PredictorSequence, rows: UnsafeMutableBufferPointer<Float>)
        throws
    /// A new sequence of `capacity` tokens holding the first `count` tokens of `source`, to go
    /// on from there (the prefix cache's copy, of as many rows as `reusablePrefix` allows), or
    /// nil when the predictor gives no copies.
    func makeSequence(capacity: Int, copying count: Int, of source: any PredictorSequence) -> (any PredictorSequence)?
    /// True when `makeSequence(capacity:copying:of:)` can give copies at all; without it the
    /// runner keeps no finished sequences (they could never be reused).
    var copiesPrefixesExactly: Bool { get }
    /// How many of `shared` leading rows of a sequence computed as a prompt of
    /// `keptPromptLength` tokens are the rows a prompt of `promptLength` tokens computes (the
    /// prefix cache's rule): a row's arithmetic may depend on the prompt it is in.
    func reusablePrefix(_ shared: Int, keptPromptLength: Int, promptLength: Int) -> Int
    /// Memory one token takes in a sequence (the prefix cache's budget is counted in it).
    var bytesPerSequenceToken: Int { get }
    /// Most tokens and sequences one batched prediction should hold; the generation worker
    /// fills its rounds up to these (defaults below).
    var maxTokensPerPass: Int { get }
    var maxSequencesPerPass: Int { get }
}

/// One sequence's tokens for a batched prediction, and where its next-token logits go.
public struct PredictionInput {
    public var tokens: ArraySlice<Int32>
    public var sequence: any PredictorSequence
    public var logits: UnsafeMutableBufferPointer<Float>
    /// When positive, `tokens` is a piece of a prompt of this many tokens, its indices the
    /// positions in it (`predict(prompt:of:sequence:logits:)`); 0 for a decode step's token.
    public var promptLength: Int

    public init(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>,
        promptLength: Int = 0
    ) {
        self.tokens = tokens
        self.sequence = sequence
        self.logits = logits
        self.promptLength = promptLength
    }
}

extension TokenPredictor {
    /// By default a 64-token prompt chunk plus one token for each of 16 other sequences.
    public var maxTokensPerPass: Int { 80 }
    public var maxSequencesPerPass: Int { 16 }

    /// By default no copies: every sequence starts empty.
    public func makeSequence(capacity: Int, copying count: Int, of source: any PredictorSequence)
        -> (any PredictorSequence)?
    { nil }
    public var copiesPrefixesExactly: Bool { false }
    /// By default a row does not depend on the prompt it is in.
    public func reusablePrefix(_ shared: Int, keptPromptLength: Int, promptLength: Int) -> Int { shared }
    public var bytesPerSequenceToken: Int { 1 }

    /// By default one token at a time: each row is then exactly what `predict` gives after that
    /// token. Predictors whose rows differ when computed together (llama.cpp's arithmetic
    /// depends on the batch) override it with the pass that computes all rows at once.
    public func score(
        tokens: ArraySlice<Int32>, promptLength: Int, sequence: any PredictorSequence,
        rows: UnsafeMutableBufferPointer<Float>, normalizers: UnsafeMutableBufferPointer<Float>
    ) throws {
        let v = vocabularySize
        precondition(rows.count >= tokens.count * v, "score: rows hold fewer than tokens × vocabulary floats")
        precondition(normalizers.count >= tokens.count, "score: fewer normalizers than tokens")
        for (t, i) in tokens.indices.enumerated() {
            let row = UnsafeMutableBufferPointer(rebasing: rows[(t * v)..<((t + 1) * v)])
            try predict(tokens: tokens[i...i], sequence: sequence, logits: row)
            normalizers[t] = ck_logsumexp(row.baseAddress!, Int32(v))
        }
    }

    /// By default one token at a time: each row is then `predict`'s by construction.
    public func verify(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, rows: UnsafeMutableBufferPointer<Float>
    ) throws {
        let v = vocabularySize
        precondition(rows.count >= tokens.count * v, "verify: rows hold fewer than tokens × vocabulary floats")
        for (t, i) in tokens.indices.enumerated() {
            try predict(
                tokens: tokens[i...i], sequence: sequence,
                logits: UnsafeMutableBufferPointer(rebasing: rows[(t * v)..<((t + 1) * v)]))
        }
    }

    /// By default a prompt's piece is computed as any tokens are.
    public func predict(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, sequence: any PredictorSequence,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        try predict(tokens: tokens, sequence: sequence, logits: logits)
    }

    /// Several sequences at once. Predictors that can share work between sequences (one pass
    /// over the weights for all of them) override this; the default runs them one by one.
    /// Must throw before changing anything when any input is bad.
    public func predict(batch: [PredictionInput]) throws {
        for input in batch {
            if input.promptLength > 0 {
                try predict(
                    prompt: input.tokens, of: input.promptLength, sequence: input.sequence, logits: input.logits)
            } else {
                try predict(tokens: input.tokens, sequence: input.sequence, logits: input.logits)
            }
        }
    }
}
