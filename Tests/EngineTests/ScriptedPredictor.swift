import Foundation
import Synchronization
import Telemetry
import Timekeeping

@testable import Engine

/// A stand-in model for generation tests: token ids are bytes (0–255) plus an end token 256;
/// after any context it strongly prefers the next byte of `script`, then the end token.
/// It can sleep per step to make cancellation timing observable.
final class ScriptedPredictor: TokenPredictor, @unchecked Sendable {
    static let endToken: Int32 = 256
    let script: [UInt8]
    let stepDelay: Duration
    let vocabularySize = 257
    let contextLength: Int
    /// Token counts of every predict call, in order.
    let calls = Locked<[Int]>([])
    /// The sequence of every predict call, in order (batched calls: one entry per sequence).
    let sequencesCalled = Locked<[ObjectIdentifier]>([])
    let inFlight = Atomic<Int>(0)

    init(script: String, contextLength: Int = 512, stepDelay: Duration = .zero) {
        self.script = Array(script.utf8)
        self.contextLength = contextLength
        self.stepDelay = stepDelay
    }

    final class Sequence: PredictorSequence, @unchecked Sendable {
        let capacity: Int
        var tokens: [Int32] = []
        init(capacity: Int) { self.capacity = capacity }
        var count: Int { tokens.count }
        func truncate(to length: Int) { tokens.removeSubrange(min(length, tokens.count)...) }
    }

    /// Sizes of every batched prediction, in order.
    let batches = Locked<[Int]>([])

    func makeSequence(capacity: Int) -> any PredictorSequence { Sequence(capacity: capacity) }

    /// Token counts of each input of every batched prediction, in order.
    let batchShapes = Locked<[[Int]]>([])

    func predict(batch: [PredictionInput]) throws {
        batches.withLock { $0.append(batch.count) }
        batchShapes.withLock { $0.append(batch.map(\.tokens.count)) }
        for input in batch { try predict(tokens: input.tokens, sequence: input.sequence, logits: input.logits) }
    }

    func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        inFlight.add(1, ordering: .relaxed)
        defer { inFlight.subtract(1, ordering: .relaxed) }
        calls.withLock { $0.append(tokens.count) }
        sequencesCalled.withLock { $0.append(ObjectIdentifier(sequence)) }
        if stepDelay > .zero { Thread.sleep(forTimeInterval: stepDelay.inSeconds) }
        let seq = sequence as! Sequence
        guard seq.tokens.count + tokens.count <= seq.capacity else { throw GenerationError.computeFailed("overflow") }
        seq.tokens += tokens
        // Position in the answer = tokens after the last end token / prompt marker 255.
        let lastMarker = seq.tokens.lastIndex(of: 255) ?? -1
        let produced = seq.tokens.count - lastMarker - 1
        for i in 0..<logits.count { logits[i] = Float(i % 7) * 0.01 }
        let next = produced < script.count ? Int(script[produced]) : Int(Self.endToken)
        logits[next] = 10
    }
}

/// Bytes in, complete UTF-8 out, as the real streaming detokenizer does it.
struct ByteDecoder: IncrementalTextDecoder {
    var pending: [UInt8] = []
    func bytes(of id: Int32) -> [UInt8] { id < 256 ? [UInt8(id)] : [] }
    mutating func append(_ id: Int32) -> String {
        guard id < 256 else { return "" }
        pending.append(UInt8(id))
        if let s = String(validating: pending, as: UTF8.self) {
            pending.removeAll()
            return s
        }
        return ""
    }
}

extension ScriptedPredictor {
    func runner(
        admission: AdmissionPolicy = AdmissionPolicy(), metrics: Metrics = Metrics(), clock: any TimeSource = .system
    ) -> GenerationRunner {
        GenerationRunner(
            predictor: self, endOfGeneration: [Self.endToken], makeDecoder: { ByteDecoder() }, admission: admission,
            metrics: metrics, clock: clock)
    }

    /// The most sequences whose first and last predict calls overlap: without parking, how
    /// many generations the engine was stepping at once.
    var maxOverlappingSequences: Int {
        let log = sequencesCalled.withLock { $0 }
        var first: [ObjectIdentifier: Int] = [:]
        var last: [ObjectIdentifier: Int] = [:]
        for (i, s) in log.enumerated() {
            if first[s] == nil { first[s] = i }
            last[s] = i
        }
        return log.indices.map { i in first.keys.filter { first[$0]! <= i && i <= last[$0]! }.count }.max() ?? 0
    }

    /// A prompt ending in the marker the script counts from.
    static func prompt(_ text: String) -> [Int32] { Array(text.utf8).map { Int32($0) } + [255] }
}
