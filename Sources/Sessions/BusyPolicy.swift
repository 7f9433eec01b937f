/// What a new request does when its session is already answering (`on_busy`).
public enum BusyPolicy: String, Sendable, CaseIterable {
    /// Wait in order behind what runs (bounded by the session's queue limit).
    case queue
    /// Refuse while anything runs or waits.
    case reject
    /// The `.task(id:)` rule: stop what runs, await its end, then run the newest request;
    /// every older waiting request ends cancelled (reason `superseded`) without output.
    case replace
}
