@testable import Engine

/// Forwards everything to `target`, calling `willPredict()` on the engine's thread before each
/// prediction: the base of the test predictors that watch or hold a real predictor mid-way.
class ForwardingPredictor: TokenPredictor, @unchecked Sendable {
    let target: any TokenPredictor

    init(target: any TokenPredictor) { self.target = target }

    /// Runs on the engine's thread just before each prediction (single or batched).
    func willPredict() {}

    var vocabularySize: Int { target.vocabularySize }
    var contextLength: Int { target.contextLength }
    var maxTokensPerPass: Int { target.maxTokensPerPass }
    var maxSequencesPerPass: Int { target.maxSequencesPerPass }

    func makeSequence(capacity: Int) -> any PredictorSequence { target.makeSequence(capacity: capacity) }

    func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        willPredict()
        try target.predict(tokens: tokens, sequence: sequence, logits: logits)
    }

    func predict(
        prompt tokens: ArraySlice<Int32>, of promptLength: Int, sequence: any PredictorSequence,
        logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        willPredict()
        try target.predict(prompt: tokens, of: promptLength, sequence: sequence, logits: logits)
    }

    func predict(batch: [PredictionInput]) throws {
        willPredict()
        try target.predict(batch: batch)
    }
}
