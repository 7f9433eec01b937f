import Engine

/// A generation a route has handed to the engine and will await: its own (a ticket, already
/// holding a place or waiting for one), or one it may share with identical requests in flight
/// (joined or started when awaited).
enum PendingGeneration: Sendable {
    case ticket(GenerationTicket)
    case shared(GenerationRequest, InferenceEngine, @Sendable (GenerationEvent) -> Void)

    /// The result once the engine has stopped working on it; the awaiting Task's cancellation
    /// stops it (a shared one only when its last requester goes).
    func result() async throws(GenerationError) -> GenerationResult {
        switch self {
        case .ticket(let ticket):
            try await ticket.result()
        case .shared(let request, let engine, let onEvent):
            try await engine.generate(request, sharing: true, onEvent: onEvent)
        }
    }
}
