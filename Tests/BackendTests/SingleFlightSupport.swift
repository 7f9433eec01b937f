import Backend
import Engine
import Telemetry
import TestSupport
import Testing

/// A gate a scripted generation waits at (`ScriptedBackend.Step.hold`) until the test opens it,
/// so "while it is in flight" is a fact, not a race.
final class Gate: Sendable {
    private struct State {
        var open = false
        var held = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    var held: Int { state.withLock { $0.held } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { s in
                s.held += 1
                if !s.open { s.waiters.append(continuation) }
                return s.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilHeld() async throws { try await SingleFlightSupport.until { self.held > 0 } }
}

/// What one request saw, in order: "prompt" for `started`, else the snapshot text.
final class Seen: Sendable {
    let events = Locked<[String]>([])
    var all: [String] { events.withLock { $0 } }
    var snapshots: [String] { all.filter { $0 != "prompt" } }
    func record(_ event: GenerationEvent) {
        switch event {
        case .started: events.withLock { $0.append("prompt") }
        case .snapshot(let content, _): events.withLock { $0.append(content) }
        case .queued: break
        }
    }
}

/// A session's KV sequence, only to be carried by a request.
final class StubSequence: PredictorSequence {
    var count: Int { 0 }
    var capacity: Int { 512 }
    var tokens: [Int32] { [] }
    func truncate(to length: Int) {}
}

enum SingleFlightSupport {
    /// Polls a condition the test is waiting for (never a timing assertion: only a bound on waiting).
    static func until(_ condition: () -> Bool) async throws {
        for _ in 0..<4000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
        try #require(condition())
    }

    /// A backend answering every request with `answer`, one character a step, held at `gate`
    /// after `holdAfter` snapshots.
    static func backend(_ answer: String, holdAfter: Int, gate: Gate) -> ScriptedBackend {
        ScriptedBackend { _ in
            var steps: [ScriptedBackend.Step] = []
            for (i, end) in answer.indices.enumerated() {
                steps.append(.text(String(answer[...end])))
                if i + 1 == holdAfter { steps.append(.hold(gate.wait)) }
            }
            return steps
        }
    }

    static func request(
        _ backend: ScriptedBackend, _ label: String, prompt: String = "q", maxTokens: Int = 400
    ) -> BackendRequest {
        BackendRequest(
            prompt: backend.prepare(.text(prompt)), maxTokens: maxTokens, sampling: .greedy, label: label)
    }
}
