/// The order of requests in one session, as pure state: at most one active request, the rest
/// waiting. Every change returns what the session must do; no I/O, no awaiting.
///
/// Order: interactive requests first, then background ones, first come first served within
/// each class. A background request starts only when no interactive one waits.
struct SessionQueue: Sendable {
    struct Waiter: Sendable, Equatable {
        var id: String
        var priority: TurnPriority
    }

    enum SubmitAction: Sendable, Equatable {
        /// Nothing runs or waits: the request is now the active one.
        case start
        /// The request waits at `position` (1 is next).
        case wait(position: Int)
        /// `replace`: stop `cancelActive` (if any), end every id in `superseded` (they never
        /// ran), and wait at `position` for the active one to end.
        case replace(cancelActive: String?, superseded: [String], position: Int)
        case rejectBusy(active: String?)
        case rejectQueueFull(limit: Int)
    }

    let maxWaiting: Int
    private(set) var active: String?
    /// Arrival order; `ordered` applies priorities.
    private(set) var arrivals: [Waiter] = []

    init(maxWaiting: Int) { self.maxWaiting = maxWaiting }

    var isIdle: Bool { active == nil && arrivals.isEmpty }
    var waitingCount: Int { arrivals.count }

    /// Waiting requests in the order they will start.
    var ordered: [Waiter] {
        arrivals.filter { $0.priority == .interactive } + arrivals.filter { $0.priority == .background }
    }

    /// 1-based place in line, nil when not waiting.
    func position(of id: String) -> Int? {
        ordered.firstIndex { $0.id == id }.map { $0 + 1 }
    }

    func contains(_ id: String) -> Bool { active == id || arrivals.contains { $0.id == id } }

    mutating func submit(id: String, policy: BusyPolicy, priority: TurnPriority) -> SubmitAction {
        if isIdle {
            active = id
            return .start
        }
        switch policy {
        case .reject:
            return .rejectBusy(active: active)
        case .queue:
            guard arrivals.count < maxWaiting else { return .rejectQueueFull(limit: maxWaiting) }
            arrivals.append(Waiter(id: id, priority: priority))
            return .wait(position: position(of: id)!)
        case .replace:
            let superseded = arrivals.map(\.id)
            arrivals = [Waiter(id: id, priority: priority)]
            if active == nil {
                // Unreachable while promotion is immediate, but keep the rule total.
                arrivals = []
                active = id
                return superseded.isEmpty ? .start : .replace(cancelActive: nil, superseded: superseded, position: 0)
            }
            return .replace(cancelActive: active, superseded: superseded, position: 1)
        }
    }

    /// Removes a waiting request (cancelled or disconnected while queued). False if not waiting.
    @discardableResult
    mutating func remove(_ id: String) -> Bool {
        guard let i = arrivals.firstIndex(where: { $0.id == id }) else { return false }
        arrivals.remove(at: i)
        return true
    }

    /// The active request ended (recorded in the transcript). Returns the next one to start,
    /// now active, or nil when the session is idle.
    mutating func activeFinished() -> String? {
        active = nil
        guard let next = ordered.first else { return nil }
        remove(next.id)
        active = next.id
        return next.id
    }

    /// Every waiting id (for cancelling a whole session).
    mutating func removeAllWaiting() -> [String] {
        defer { arrivals = [] }
        return ordered.map(\.id)
    }
}
