import CKernels
import Engine
import Foundation
import Synchronization
import Telemetry

/// llama-bench-style measurements of the forward pass: prompt processing (`ppN`: N tokens
/// into an empty cache, in the engine's prompt chunks) and generation (`tgN`: N single-token
/// steps; `tgN@D` after a D-token context), plus a memory-read probe so decode's weight bandwidth can be put against the
/// machine's own limit.
public enum EngineBenchmark {
    public enum Test: Sendable, Equatable, CustomStringConvertible {
        case prompt(Int)
        case generation(Int)
        /// N steps of S sequences decoding together, one batched pass per step (`tgNxS`): what
        /// S concurrent streams can reach at most, before HTTP, sampling and scheduling.
        case batchedGeneration(Int, sequences: Int)
        /// N single-token steps after a D-token context already in the cache (`tgN@D`, as
        /// llama-bench's depth): decode when attention reads a long cache, not only the weights.
        case generationAtDepth(Int, depth: Int)

        public var description: String {
            switch self {
            case .prompt(let n): "pp\(n)"
            case .generation(let n): "tg\(n)"
            case .batchedGeneration(let n, let s): "tg\(n)x\(s)"
            case .generationAtDepth(let n, let d): "tg\(n)@\(d)"
            }
        }

        /// Tokens computed in one repetition (all sequences together).
        public var tokens: Int {
            switch self {
            case .prompt(let n), .generation(let n), .generationAtDepth(let n, _): n
            case .batchedGeneration(let n, let s): n * s
            }
        }
    }

    public struct Result: Sendable {
        public var test: Test
        public var threads: Int
        /// Tokens per second of each repetition.
        public var samples: [Double]
        /// Cores other processes used during each repetition (empty without /proc).
        public var othersCores: [Double] = []
        public var mean: Double { samples.reduce(0, +) / Double(max(samples.count, 1)) }
        public var median: Double {
            let s = samples.sorted()
            guard !s.isEmpty else { return 0 }
            return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        }
        public var standardDeviation: Double {
            guard samples.count > 1 else { return 0 }
            let m = mean
            return (samples.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(samples.count - 1)).squareRoot()
        }
    }

    /// Runs `test` `repetitions` times (after one warm-up) and returns tokens/s per run. With
    /// `waitForQuiet`, each repetition first waits (up to 10 s) for other processes to go quiet.
    public static func measure(
        model: LlamaModel, test: Test, repetitions: Int, waitForQuiet: Bool = false
    ) throws -> Result {
        let vocab = model.config.vocabularySize
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: vocab)
        defer { logits.deallocate() }
        // Deterministic but varied token ids, as a real prompt would be.
        var rng = SeededGenerator(seed: 1234)
        let promptTokens = (0..<max(test.tokens, 1)).map { _ in Int32(rng.next() % UInt64(vocab)) }
        var samples: [Double] = []
        var others: [Double] = []
        // The context of a depth test, computed once (not timed); each repetition decodes after it.
        var context: KVCache? = nil
        if case .generationAtDepth(let n, let depth) = test {
            let cache = model.makeCache(capacity: depth + n + 1)
            guard cache.capacity == depth + n + 1 else {
                throw BenchError("\(test) needs \(depth + n + 1) positions; the context holds \(cache.capacity)")
            }
            let ids = (0..<depth).map { _ in Int32(rng.next() % UInt64(vocab)) }
            var i = 0
            while i < depth {
                let end = min(i + LlamaModel.maxBatch, depth)
                try model.forward(tokens: Array(ids[i..<end]), cache: cache, logits: logits)
                i = end
            }
            context = cache
        }
        for rep in 0...repetitions {
            context?.truncate(to: context!.count - (rep > 0 ? test.tokens : 0))
            let cache = context ?? model.makeCache(capacity: min(model.config.contextLength, test.tokens + 1))
            var batch: BatchedDecode? = nil
            if case .batchedGeneration(let n, let s) = test {
                batch = BatchedDecode(model: model, sequences: s, steps: n, firstTokens: promptTokens)
            }
            if waitForQuiet && rep > 0 { MachineLoad.waitUntilQuiet() }
            let before = MachineLoad.ticks()
            let start = ContinuousClock.now
            switch test {
            case .prompt(let n):
                var i = 0
                while i < n {
                    let end = min(i + LlamaModel.maxBatch, n)
                    try model.forward(tokens: Array(promptTokens[i..<end]), cache: cache, logits: logits)
                    i = end
                }
            case .generation(let n), .generationAtDepth(let n, _):
                var token: Int32 = 1
                for _ in 0..<n {
                    try model.forward(tokens: [token], cache: cache, logits: logits)
                    token = Sampler.argmax(UnsafeBufferPointer(logits))
                }
            case .batchedGeneration(let n, _):
                for _ in 0..<n { try batch!.step() }
            }
            let seconds = (ContinuousClock.now - start).inSeconds
            if rep > 0 {
                samples.append(Double(test.tokens) / seconds)
                if let before, let after = MachineLoad.ticks() {
                    others.append(MachineLoad.othersCores(from: before, to: after, seconds: seconds))
                }
            }
        }
        return Result(test: test, threads: model.threads, samples: samples, othersCores: others)
    }

    /// Memory-read bandwidth in GB/s: the best of several sweeps over a buffer far larger than
    /// the caches, split over `threads` threads.
    public static func memoryBandwidth(threads: Int, megabytes: Int = 512, repetitions: Int = 5) -> Double {
        let bytes = megabytes << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { buffer.deallocate() }
        memset(buffer, 1, bytes)  // touch every page so the sweep measures reads, not page faults
        let per = bytes / threads / 128 * 128
        let base = SendableAddress(UInt(bitPattern: buffer))
        let sink = Atomic<UInt64>(0)
        var best = 0.0
        for _ in 0..<repetitions {
            let start = ContinuousClock.now
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                let v = ck_read_sweep(UnsafeRawPointer(bitPattern: base.value)! + t * per, per)
                sink.add(v, ordering: .relaxed)
            }
            let seconds = (ContinuousClock.now - start).inSeconds
            best = max(best, Double(per * threads) / seconds / 1e9)
        }
        return best
    }
}

/// Sequences that decode greedily in lockstep, one batched pass per step.
private struct BatchedDecode: ~Copyable {
    let model: LlamaModel
    let vocabulary: Int
    /// Shape: [sequences × vocabulary].
    let logits: UnsafeMutableBufferPointer<Float>
    var items: [LlamaModel.BatchItem]
    var histories: [[Int32]]

    init(model: LlamaModel, sequences: Int, steps: Int, firstTokens: [Int32]) {
        self.model = model
        vocabulary = model.config.vocabularySize
        logits = .allocate(capacity: sequences * vocabulary)
        logits.initialize(repeating: 0)
        histories = (0..<sequences).map { i in
            var h = [firstTokens[i % firstTokens.count]]
            h.reserveCapacity(steps + 1)
            return h
        }
        items = (0..<sequences).map { [logits, vocabulary] i in
            LlamaModel.BatchItem(
                tokens: [], cache: model.makeCache(capacity: min(model.config.contextLength, steps + 1)),
                logits: UnsafeMutableBufferPointer(rebasing: logits[(i * vocabulary)..<((i + 1) * vocabulary)]))
        }
    }

    deinit { logits.deallocate() }

    mutating func step() throws {
        for i in items.indices { items[i].tokens = histories[i][(histories[i].count - 1)...] }
        try model.forward(batch: items)
        for i in items.indices {
            items[i].tokens = []
            histories[i].append(Sampler.argmax(UnsafeBufferPointer(items[i].logits)))
        }
    }
}

/// An address handed to worker threads that each read their own part of one buffer.
private struct SendableAddress: Sendable {
    let value: UInt
    init(_ value: UInt) { self.value = value }
}
