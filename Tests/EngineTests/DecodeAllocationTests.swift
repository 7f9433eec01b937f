import CAllocationCounter
import Foundation
import Synchronization
import Testing

@testable import Engine

/// The decode loop allocates nothing per token once it has warmed up: the model's passes (single
/// and batched), the sampler, and the generation worker's rounds. Allocations are counted per
/// thread by the test executable's malloc (`CAllocationCounter`), so suites running beside these
/// do not disturb the counts.
@Suite(.enabled(if: ac_is_available(), "the allocation counter replaces malloc only in plain builds"))
struct DecodeAllocationTests {
    /// One model for the suite: loading is the slow part.
    static let model = Result { try LlamaModel(gguf: try GGUFFile(path: try TestFixtures.requireModel())) }

    /// Allocations the calling thread makes while `body` runs.
    static func allocations(_ body: () throws -> Void) rethrows -> UInt64 {
        let before = ac_thread_allocations()
        try body()
        return ac_thread_allocations() - before
    }

    @Test func theCounterSeesASwiftArrayBeingMade() {
        // Guards the tests below against a counter that counts nothing.
        var sink = 0
        let n = Self.allocations {
            let array = (0..<100).map { $0 * 3 }
            sink = array.reduce(0, +)
        }
        #expect(n >= 1 && sink == 14_850)
    }

    @Test func singleTokenPassesAllocateNothing() throws {
        let model = try Self.model.get()
        let cache = model.makeCache(capacity: 256)
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: model.config.vocabularySize)
        defer { logits.deallocate() }
        var history: [Int32] = [1, 9690, 28, 2]
        history.reserveCapacity(256)
        try model.forward(tokens: history, cache: cache, logits: logits)
        history.append(Int32(ModelGoldenTests.argmax(logits)))
        // Warm-up: the first passes may size lazily kept state.
        for _ in 0..<3 {
            try model.forward(tokens: history[(history.count - 1)...], cache: cache, logits: logits)
            history.append(Int32(ModelGoldenTests.argmax(logits)))
        }
        let n = try Self.allocations {
            for _ in 0..<32 {
                try model.forward(tokens: history[(history.count - 1)...], cache: cache, logits: logits)
                history.append(Sampler.argmax(UnsafeBufferPointer(logits)))
            }
        }
        #expect(n == 0, "\(n) allocations in 32 decode steps")
        #expect(cache.count == history.count - 1)
    }

    @Test func batchedPassesAllocateNothing() throws {
        let model = try Self.model.get()
        let vocabulary = model.config.vocabularySize
        let sequences = 3
        let caches = (0..<sequences).map { _ in model.makeCache(capacity: 256) }
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: sequences * vocabulary)
        defer { logits.deallocate() }
        func buffer(_ i: Int) -> UnsafeMutableBufferPointer<Float> {
            UnsafeMutableBufferPointer(rebasing: logits[(i * vocabulary)..<((i + 1) * vocabulary)])
        }
        var histories: [[Int32]] = (0..<sequences).map { i in
            var h: [Int32] = [1, 9690, 28, Int32(300 + i)]
            h.reserveCapacity(256)
            return h
        }
        for i in 0..<sequences {
            try model.forward(tokens: histories[i], cache: caches[i], logits: buffer(i))
            histories[i].append(Sampler.argmax(UnsafeBufferPointer(buffer(i))))
        }
        var items = (0..<sequences).map { i in
            LlamaModel.BatchItem(tokens: [], cache: caches[i], logits: buffer(i))
        }
        func step() throws {
            for i in 0..<sequences { items[i].tokens = histories[i][(histories[i].count - 1)...] }
            try model.forward(batch: items)
            // Drop the slices before appending, or each history would be copied.
            for i in 0..<sequences { items[i].tokens = [] }
            for i in 0..<sequences { histories[i].append(Sampler.argmax(UnsafeBufferPointer(buffer(i)))) }
        }
        for _ in 0..<4 { try step() }
        let n = try Self.allocations {
            for _ in 0..<24 { try step() }
        }
        #expect(n == 0, "\(n) allocations in 24 batched decode steps")
        for i in 0..<sequences { #expect(caches[i].count == histories[i].count - 1) }
    }

    @Test(arguments: [
        ("defaults", SamplingOptions()),
        (
            "penalty",
            {
                var o = SamplingOptions(); o.repeatPenalty = 1.1; return o
            }()
        ),
        (
            "no top-k",
            {
                var o = SamplingOptions(); o.topK = 0; o.repeatPenalty = 1.1; return o
            }()
        ),
        (
            "greedy",
            {
                var o = SamplingOptions.greedy; o.repeatPenalty = 1.3; return o
            }()
        ),
        (
            "frequency and presence",
            {
                var o = SamplingOptions(); o.frequencyPenalty = 0.5; o.presencePenalty = 0.3; return o
            }()
        ),
        (
            "greedy, all penalties",
            {
                var o = SamplingOptions.greedy; o.repeatPenalty = 1.1; o.frequencyPenalty = 1; o.presencePenalty = -1
                return o
            }()
        ),
    ])
    func samplingAllocatesNothingAfterTheFirstToken(_ name: String, _ options: SamplingOptions) {
        var options = options
        options.seed = 7
        var sampler = Sampler(options: options)
        let vocabulary = 49_152
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: vocabulary)
        defer { logits.deallocate() }
        var history: [Int32] = Array(0..<200).map { Int32($0 * 37 % vocabulary) }
        history.reserveCapacity(400)
        var rng = SeededGenerator(seed: 11)
        func fill() {
            for i in 0..<vocabulary { logits[i] = rng.nextUnitFloat() * 12 - 4 }
        }
        fill()
        // The first 200 are the prompt: the answer starts empty, as a real one does.
        history.append(sampler.sample(logits: logits, recent: history[...], generated: history[200...]))
        let n = Self.allocations {
            for _ in 0..<16 {
                fill()
                history.append(sampler.sample(logits: logits, recent: history[...], generated: history[200...]))
            }
        }
        #expect(n == 0, "\(name): \(n) allocations in 16 samples")
    }
}

/// The generation worker's rounds, end to end on the engine's own thread: the predictor below
/// reads that thread's allocation count at every prediction.
@Suite(.enabled(if: ac_is_available(), "the allocation counter replaces malloc only in plain builds"))
struct WorkerAllocationTests {
    /// Forwards to the real model and notes the worker thread's allocation count at each call.
    final class CountingPredictor: ForwardingPredictor, @unchecked Sendable {
        /// Allocation counts at the start of each prediction, worker thread only until it stops.
        private(set) var counts: UnsafeMutableBufferPointer<UInt64>
        private(set) var calls = 0

        init(model: LlamaModel) {
            counts = .allocate(capacity: 512)
            super.init(target: model)
        }

        deinit { counts.deallocate() }

        override func willPredict() {
            if calls < counts.count { counts[calls] = ac_thread_allocations() }
            calls += 1
        }
    }

    /// Produces no text, so no snapshot (a new string per visible change, by design) is made.
    struct SilentDecoder: IncrementalTextDecoder {
        mutating func append(_ id: Int32) -> String { "" }
        func bytes(of id: Int32) -> [UInt8] { [] }
    }

    static func request(_ prompt: [Int32], sampling: SamplingOptions) -> GenerationRequest {
        var r = GenerationRequest(promptTokens: prompt, maxTokens: 48, sampling: sampling)
        r.ignoreEndOfGeneration = true
        return r
    }

    /// Allocations the worker thread made between predictions `from` and `to`.
    static func allocations(_ probe: CountingPredictor, from: Int, to: Int) -> UInt64 {
        probe.counts[to] - probe.counts[from]
    }

    /// One stream (single steps), three (batched steps), and three with places for two (the
    /// admission queue, holding a waiter, is consulted every round).
    @Test(arguments: [(1, 8), (3, 8), (3, 2)])
    func decodeRoundsAllocateNothing(streams: Int, places: Int) async throws {
        let probe = CountingPredictor(model: try DecodeAllocationTests.model.get())
        let runner = GenerationRunner(
            predictor: probe, endOfGeneration: [], makeDecoder: { SilentDecoder() },
            admission: AdmissionPolicy(maxActiveSequences: places))
        var sampled = SamplingOptions()
        sampled.seed = 5
        sampled.repeatPenalty = 1.1
        let tickets = try (0..<streams).map { i in
            try runner.submit(Self.request([1, 9690, 28, Int32(400 + i)], sampling: i == 0 ? sampled : .greedy))
        }
        var results: [GenerationResult] = []
        for ticket in tickets { results.append(try await ticket.result()) }
        for result in results { #expect(result.usage.completionTokens == 48) }
        if places < streams {
            // The last one waited for a place: a decode round of its own came after the others'.
            #expect(probe.calls >= 2 * 48)
        }
        // Every stream is decoding well before call 12 and none finishes before call 40: the
        // rounds in between are decode steps only (batched when there are several streams).
        #expect(probe.calls >= 48)
        let n = Self.allocations(probe, from: 12, to: 40)
        #expect(
            n == 0,
            "\(n) allocations on the worker thread in 28 decode rounds of \(streams) stream(s), \(places) places")
    }
}
