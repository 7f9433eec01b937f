import Foundation
import Telemetry

@testable import Engine

/// A `ScriptedPredictor` whose `holdAtCall`-th prediction blocks the engine's thread until the
/// test opens the gate, so a test can act while a generation is held mid-way, deterministically
/// and without sleeping.
final class GatedPredictor: ForwardingPredictor, @unchecked Sendable {
    let inner: ScriptedPredictor
    let holdAtCall: Int

    private let condition = NSCondition()
    private var callsSeen = 0
    private var isOpen = false
    private let held = Locked<(isHeld: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(script: String, holdAtCall: Int, contextLength: Int = 512) {
        let inner = ScriptedPredictor(script: script, contextLength: contextLength)
        self.inner = inner
        self.holdAtCall = holdAtCall
        super.init(target: inner)
    }

    func runner() -> GenerationRunner {
        GenerationRunner(
            predictor: self, endOfGeneration: [ScriptedPredictor.endToken], makeDecoder: { ByteDecoder() })
    }

    /// Token counts of every prediction so far, in order.
    var calls: [Int] { inner.calls.withLock { $0 } }

    /// Returns once the engine's thread is blocked at the gate.
    func waitUntilHeld() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = held.withLock { h in
                if !h.isHeld { h.waiters.append(continuation) }
                return h.isHeld
            }
            if already { continuation.resume() }
        }
    }

    /// Lets the held prediction, and every later one, run.
    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// The gate: the `holdAtCall`-th prediction waits here until `open()`.
    override func willPredict() {
        condition.lock()
        defer { condition.unlock() }
        callsSeen += 1
        guard callsSeen == holdAtCall, !isOpen else { return }
        let waiters = held.withLock { h in
            h.isHeld = true
            defer { h.waiters.removeAll() }
            return h.waiters
        }
        for waiter in waiters { waiter.resume() }
        while !isOpen { condition.wait() }
    }
}
