import CMicroHTTPD
import Foundation
import Telemetry

/// What the connection has to send once the handler has answered.
struct ResponseHead: Sendable {
    var status: Int
    var headers: [(String, String)]
    /// nil for an event stream.
    var body: [UInt8]?
}

/// The lifecycle of one request on its connection, as pure state: each event returns the
/// action the caller (libmicrohttpd callback or the request's Task) must perform.
///
/// receiving → running (Task computes, connection suspended) → responding (head queued;
/// for a stream, the producer keeps writing) → closed (NOTIFY_COMPLETED).
struct ExchangeState {
    enum Phase: Equatable {
        case receiving, running, responding, closed
    }

    enum PollAction: Equatable {
        /// Queue this response now (libmicrohttpd thread, access handler).
        case queue
        /// Nothing to send yet: suspend the connection until woken.
        case suspend
        /// Already answered; nothing to do.
        case none
    }

    enum ReaderAction: Equatable {
        case bytes([UInt8], events: Int)
        case suspend
        case end
    }

    enum CancelAction: Equatable {
        case cancelTask(CancellationReason)
        case none
    }

    private(set) var phase: Phase = .receiving
    private(set) var head: ResponseHead?
    private(set) var suspended = false
    private(set) var taskStarted = false
    private(set) var taskFinished = false
    private(set) var cancelReason: CancellationReason?
    private(set) var eventsAtCancel = 0
    private(set) var lastOutput: ContinuousClock.Instant
    var sse = SSEQueue()

    init(now: ContinuousClock.Instant = .now) { lastOutput = now }

    /// The body is complete and the Task has been created.
    mutating func started() {
        precondition(phase == .receiving)
        phase = .running
        taskStarted = true
    }

    /// The access handler runs again (after resume or right after starting the Task).
    mutating func poll() -> PollAction {
        switch phase {
        case .running:
            if head != nil {
                phase = .responding
                return .queue
            }
            suspended = true
            return .suspend
        case .receiving, .responding, .closed:
            return .none
        }
    }

    /// The access handler answered without a Task (errors found while receiving).
    mutating func answerDirectly(_ head: ResponseHead) {
        guard phase == .receiving else { return }
        self.head = head
        phase = .responding
    }

    /// The handler answered (Task side). Returns true when the connection must be resumed.
    mutating func respond(_ head: ResponseHead) -> Bool {
        guard self.head == nil, phase != .closed else { return false }
        self.head = head
        return wake()
    }

    /// New output was queued (Task side). Returns true when the connection must be resumed.
    mutating func outputQueued(now: ContinuousClock.Instant) -> Bool {
        lastOutput = now
        return wake()
    }

    /// The stream reader asks for bytes (libmicrohttpd thread).
    mutating func read(max: Int) -> ReaderAction {
        switch sse.read(max: max) {
        case .bytes(let b, let events): return .bytes(b, events: events)
        case .end: return .end
        case .empty:
            suspended = true
            return .suspend
        }
    }

    /// The Task is done (handler returned, or producer returned). Returns true to resume.
    mutating func finished() -> Bool {
        taskFinished = true
        sse.finish()
        return wake()
    }

    /// The owner wants the Task stopped.
    mutating func cancel(_ reason: CancellationReason) -> CancelAction {
        guard taskStarted, !taskFinished, cancelReason == nil else { return .none }
        // The handler already gave its complete answer: the Task is only returning. A client
        // that reads that answer and hangs up at once has not interrupted anything.
        if reason == .clientDisconnected && head?.body != nil { return .none }
        cancelReason = reason
        eventsAtCancel = sse.eventsAccepted
        return .cancelTask(reason)
    }

    /// libmicrohttpd finished with the request (NOTIFY_COMPLETED): the connection must never be
    /// touched again, and a Task still running is cancelled so it does not outlive it.
    mutating func closed() -> CancelAction {
        phase = .closed
        suspended = false
        return cancel(.clientDisconnected)
    }

    private mutating func wake() -> Bool {
        guard suspended, phase != .closed else { return false }
        suspended = false
        return true
    }
}

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

    /// Side effects the server wants on some transitions (metrics), kept out of the state.
    struct Hooks: Sendable {
        var eventsSent: @Sendable (Int) -> Void = { _ in }
        var eventsDropped: @Sendable (Int) -> Void = { _ in }
    }

    init(requestID: String, method: HTTPMethod, path: String, connection: ConnectionHandle, hooks: Hooks) {
        self.requestID = requestID
        self.method = method
        self.path = path
        self.connection = connection
        self.startedAt = .now
        self.hooks = hooks
        self.locked = Locked(Guarded(state: ExchangeState(now: .now)))
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
            return (l.state.outputQueued(now: .now), dropped)
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
