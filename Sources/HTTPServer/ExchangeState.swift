import Cancellation
import Foundation

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
