import Dispatch
import Foundation
import Synchronization
import Telemetry

/// The one thing `inferd serve` waits for: a stop signal (SIGINT/SIGTERM), or a reason to
/// stop from inside (the model failed to load). Whichever comes first wins; later ones are ignored.
final class ShutdownTrigger: Sendable {
    enum Reason: Sendable, Equatable {
        case signal(Int32)
        case modelLoadFailed
    }

    private struct State {
        var reason: Reason?
        var waiter: CheckedContinuation<Reason, Never>?
    }

    private let state = Locked(State())
    private let sources = Locked<[SignalSource]>([])
    private let onFire: @Sendable (Reason) -> Void

    /// `onFire` runs once, when the first reason arrives (e.g. to cancel a Task).
    init(onFire: @escaping @Sendable (Reason) -> Void = { _ in }) {
        self.onFire = onFire
    }

    /// Routes SIGINT and SIGTERM here instead of their default (kill the process).
    func installSignalHandlers() {
        let queue = DispatchQueue(label: "inferd.signals")
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [self] in fire(.signal(sig)) }
            source.resume()
            sources.withLock { $0.append(SignalSource(source: source)) }
        }
    }

    func fire(_ reason: Reason) {
        let waiter = state.withLock { s -> CheckedContinuation<Reason, Never>? in
            guard s.reason == nil else { return nil }
            s.reason = reason
            defer { s.waiter = nil }
            return s.waiter
        }
        guard let waiter else {
            if state.withLock({ $0.reason == reason }) { onFire(reason) }
            return
        }
        onFire(reason)
        waiter.resume(returning: reason)
    }

    func wait() async -> Reason {
        await withCheckedContinuation { c in
            let ready = state.withLock { s -> Reason? in
                if let r = s.reason { return r }
                s.waiter = c
                return nil
            }
            if let r = ready { c.resume(returning: r) }
        }
    }
}

/// A dispatch signal source kept alive for the process's life; it is only ever resumed once
/// and never touched again, so sharing the reference across threads is safe.
private struct SignalSource: @unchecked Sendable {
    let source: DispatchSourceSignal
}
