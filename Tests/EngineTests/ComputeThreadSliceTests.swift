import CKernels
import Foundation
import Synchronization
import Testing

@testable import Engine

/// The engine's compute threads ask for long scheduler slices, so that the server's threads
/// preempt them when they wake (CKernels/thread_slice.c). Linux 6.12+ reports a thread's
/// slice back through `sched_getattr`; on older kernels there is nothing to read.
@Suite struct ComputeThreadSliceTests {
    /// True when the running kernel keeps a time-shared thread's slice (Linux 6.12 or later).
    static var kernelKeepsSlices: Bool {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard parts.count == 2 else { return false }
        return parts[0] > 6 || (parts[0] == 6 && parts[1] >= 12)
    }

    /// What `ck_thread_slice_us` reads on a thread of its own after `body` ran there.
    static func onThread(_ body: @escaping @Sendable () -> Void) -> Int64 {
        let result = Mutex<Int64>(-2)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            let slice = ck_thread_slice_us()
            result.withLock { $0 = slice }
            done.signal()
        }
        thread.start()
        done.wait()
        return result.withLock { $0 }
    }

    @Test(.enabled(if: kernelKeepsSlices)) func aThreadGetsTheSliceItAsksFor() {
        // The kernel's default (its base slice: 1,400 µs on the 2-CPU machine this was written on).
        let standard = Self.onThread {}
        #expect(standard > 0 && standard != 10_000 && standard != 2_500)
        #expect(Self.onThread { _ = ck_thread_set_slice_us(10_000) } == 10_000)
        #expect(Self.onThread { _ = ck_thread_set_slice_us(2_500) } == 2_500)
        // Turned off: the thread keeps the default.
        #expect(Self.onThread { _ = ck_thread_set_slice_us(0) } == standard)
    }

    @Test(.enabled(if: kernelKeepsSlices)) func thePoolsWorkersAndTheGenerationThreadComputeWithLongSlices()
        async throws
    {
        let expected = ck_compute_slice_us()
        try #require(expected > 0, "INFERD_COMPUTE_SLICE_US turns it off in this environment")
        // Every thread of a 2-thread pool: chunks that sleep, so the worker claims some too.
        let pool = ComputePool(threads: 2)
        final class Seen: @unchecked Sendable { var slices: [Int64] = [-1, -1] }
        let seen = Seen()
        let fn: ck_chunk_fn = { ctx, _, thread in
            let seen = Unmanaged<Seen>.fromOpaque(ctx!).takeUnretainedValue()
            usleep(2000)
            seen.slices[Int(thread)] = ck_thread_slice_us()
        }
        // The caller (this test's thread) is not an engine thread; its pool worker is.
        ck_pool_run_chunks(pool.raw, fn, Unmanaged.passUnretained(seen).toOpaque(), 16)
        #expect(seen.slices[1] == expected, "\(seen.slices)")
        // The thread that runs generations (the pool's caller in the real engine).
        let p = SliceRecordingPredictor(script: "abc")
        let result = try await p.runner().generate(
            GenerationRequest(promptTokens: ScriptedPredictor.prompt("x"), maxTokens: 3, sampling: .greedy))
        #expect(result.content == "abc")
        let slices = p.slices.withLock { $0 }
        #expect(slices.count >= 3 && slices.allSatisfy { $0 == expected }, "\(slices)")
    }
}

/// A scripted predictor that records the scheduler slice of the thread each prediction runs on.
final class SliceRecordingPredictor: TokenPredictor, @unchecked Sendable {
    let inner: ScriptedPredictor
    let slices = Mutex<[Int64]>([])
    var vocabularySize: Int { inner.vocabularySize }
    var contextLength: Int { inner.contextLength }

    init(script: String) { inner = ScriptedPredictor(script: script) }

    func runner() -> GenerationRunner {
        GenerationRunner(
            predictor: self, endOfGeneration: [ScriptedPredictor.endToken], makeDecoder: { ByteDecoder() })
    }

    func makeSequence(capacity: Int) -> any PredictorSequence { inner.makeSequence(capacity: capacity) }

    func predict(batch: [PredictionInput]) throws {
        let slice = ck_thread_slice_us()
        slices.withLock { $0.append(slice) }
        try inner.predict(batch: batch)
    }

    func predict(
        tokens: ArraySlice<Int32>, sequence: any PredictorSequence, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        let slice = ck_thread_slice_us()
        slices.withLock { $0.append(slice) }
        try inner.predict(tokens: tokens, sequence: sequence, logits: logits)
    }
}
