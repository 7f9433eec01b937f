import Engine

/// A generation a route has been admitted for, whichever way it runs: a stateless request already
/// handed to the backend, or a turn waiting in its session's queue. It is the one way a route
/// consumes a generation: `run` passes the events to `observer` in order and returns the outcome,
/// which `GenerationService` has counted and logged by then. It runs in the awaiting Task, whose
/// cancellation stops it (a session's turn as its session's cancel rules say).
struct AdmittedGeneration: Sendable {
    typealias Observer = @Sendable (GenerationEvent) -> Void

    let requestID: String
    private let body: @Sendable (_ observer: @escaping Observer) async -> GenerationOutcome

    init(requestID: String, _ body: @escaping @Sendable (_ observer: @escaping Observer) async -> GenerationOutcome) {
        self.requestID = requestID
        self.body = body
    }

    /// Runs (or awaits) the generation to its end.
    func run(observer: @escaping Observer = { _ in }) async -> GenerationOutcome {
        await body(observer)
    }
}
