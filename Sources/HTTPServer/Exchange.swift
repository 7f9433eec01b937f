import CMicroHTTPD
import Cancellation
import Foundation
import Telemetry
import Timekeeping

/// A libmicrohttpd connection pointer that may cross threads; only used while the request lives.
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

/// One request on one connection: the owner of the request's Task. Only this object cancels
/// the Task; libmicrohttpd callbacks and the Task talk to each other through its locked state.
final class Exchange: Sendable {
    struct Guarded {
        var state: ExchangeState
        var task: Task<Void, Never>?
        var cancelRequestedAt: ContinuousClock.Instant?
    }

    let requestID: String
    let method: HTTPMethod
    let path: String
    let startedAt: ContinuousClock.Instant
    let context = RequestContext()
    let connection: ConnectionHandle
    private let locked: Locked<Guarded>
    /// What arrives before the Task exists (written on the libmicrohttpd thread only).
    struct Inbound {
        var route = "unmatched"
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        var bodyOverflow = false
        var discarded = 0
    }
    private let routeInfo = Locked(Inbound())
    private let hooks: Hooks
    /// What the stream's heartbeat measures silence by (the server's time source).
    let clock: any TimeSource

    /// Side effects the server wants on some transitions (metrics), kept out of the state.
    struct Hooks: Sendable {
        var eventsSent: @Sendable (Int) -> Void = { _ in }
        var eventsDropped: @Sendable (Int) -> Void = { _ in }
    }

    init(
        requestID: String, method: HTTPMethod, path: String, connection: ConnectionHandle, hooks: Hooks,
        clock: any TimeSource = .system
    ) {
        self.requestID = requestID
        self.method = method
        self.path = path
        self.connection = connection
        self.startedAt = .now
        self.hooks = hooks
        self.clock = clock
        self.locked = Locked(Guarded(state: ExchangeState(now: clock.now)))
    }

    // MARK: body and routing (libmicrohttpd thread only)

    /// Appends body bytes; returns the total received so far (overflowing bytes are not kept).
    func appendBody(_ bytes: UnsafeRawBufferPointer, limit: Int) -> (total: Int, overflow: Bool) {
        routeInfo.withLock { info in
            if !info.bodyOverflow && info.body.count + bytes.count <= limit {
                info.body.append(contentsOf: bytes)
            } else {
                info.bodyOverflow = true
                info.body = []
            }
            return (info.body.count, info.bodyOverflow)
        }
    }

    var bodyOverflow: Bool { routeInfo.withLock { $0.bodyOverflow } }
    func takeBody() -> [UInt8] {
        routeInfo.withLock { info in
            defer { info.body = [] }; return info.body
        }
    }
    var headers: [(String, String)] {
        get { routeInfo.withLock { $0.headers } }
        set { routeInfo.withLock { $0.headers = newValue } }
    }
    var discarded: Int {
        get { routeInfo.withLock { $0.discarded } }
        set { routeInfo.withLock { $0.discarded = newValue } }
    }
    var route: String {
        get { routeInfo.withLock { $0.route } }
        set { routeInfo.withLock { $0.route = newValue } }
    }

    // MARK: lifecycle

    /// Creates the request's Task (libmicrohttpd thread) and stores its handle.
    func start(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        locked.withLock { l in
            l.state.started()
            let task = Task { await operation() }
            l.task = task
            return task
        }
    }

    var task: Task<Void, Never>? { locked.withLock { $0.task } }
    var taskFinished: Bool { locked.withLock { $0.state.taskFinished } }
    var phase: ExchangeState.Phase { locked.withLock { $0.state.phase } }
    var head: ResponseHead? { locked.withLock { $0.state.head } }

    /// Access handler after the Task started: returns the head to queue, or suspends.
    func poll() -> ResponseHead? {
        locked.withLock { l in
            switch l.state.poll() {
            case .queue: return l.state.head
            case .suspend:
                // Suspending under the lock orders it before any resume decided under the lock.
                MHD_suspend_connection(connection.raw)
                return nil
            case .none: return nil
            }
        }
    }

    /// An answer queued by the access handler itself (413, 503): no Task involved.
    func setDirectHead(_ head: ResponseHead) {
        locked.withLock { $0.state.answerDirectly(head) }
    }

    func respond(_ head: ResponseHead) {
        let resume = locked.withLock { $0.state.respond(head) }
        if resume { MHD_resume_connection(connection.raw) }
    }

    func finished() -> (reason: CancellationReason?, eventsAfterCancel: Int, sinceCancel: Duration?) {
        let (resume, reason, after, at) = locked.withLock { l in
            let resume = l.state.finished()
            return (
                resume, l.state.cancelReason, l.state.sse.eventsAccepted - l.state.eventsAtCancel,
                l.cancelRequestedAt
            )
        }
        if resume { MHD_resume_connection(connection.raw) }
        return (reason, reason == nil ? 0 : after, at.map { ContinuousClock.now - $0 })
    }

    /// The owner cancels the Task, recording why first.
    @discardableResult
    func cancel(_ reason: CancellationReason) -> Bool {
        let task: Task<Void, Never>? = locked.withLock { l in
            guard case .cancelTask(let r) = l.state.cancel(reason) else { return nil }
            context.setCancellationReason(r)
            l.cancelRequestedAt = .now
            return l.task
        }
        task?.cancel()
        return task != nil
    }

    /// NOTIFY_COMPLETED: never touch the connection again; cancel a Task that is still running.
    func closed() {
        let task: Task<Void, Never>? = locked.withLock { l in
            guard case .cancelTask(let r) = l.state.closed() else { return nil }
            context.setCancellationReason(r)
            l.cancelRequestedAt = .now
            return l.task
        }
        task?.cancel()
    }

    // MARK: streaming

    func enqueue(_ change: (inout SSEQueue) -> Bool) {
        let (resume, dropped) = locked.withLock { l in
            let dropped = change(&l.state.sse)
            return (l.state.outputQueued(now: clock.now), dropped)
        }
        if dropped { hooks.eventsDropped(1) }
        if resume { MHD_resume_connection(connection.raw) }
    }

    func sse<T>(_ body: (SSEQueue) -> T) -> T { locked.withLock { body($0.state.sse) } }

    var lastOutput: ContinuousClock.Instant { locked.withLock { $0.state.lastOutput } }

    /// Stream reader (libmicrohttpd thread): copies up to `max` bytes, or suspends, or ends.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        let (result, events): (Int, Int) = locked.withLock { l in
            switch l.state.read(max: max) {
            case .bytes(let bytes, let events):
                bytes.withUnsafeBytes { src in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: src.baseAddress!, byteCount: src.count)
                }
                return (bytes.count, events)
            case .end:
                return (inferd_mhd_reader_end_of_stream(), 0)
            case .suspend:
                MHD_suspend_connection(connection.raw)
                return (0, 0)
            }
        }
        if events > 0 { hooks.eventsSent(events) }
        return result
    }
}
