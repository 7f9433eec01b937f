import GenerationVocabulary

/// A generation handed to a backend that its requester will await: already holding a place or
/// waiting for one, or one it shares with identical requests in flight (`SingleFlightBackend`).
/// The awaiting Task's cancellation stops it (a shared one only when its last requester goes).
public struct PendingGeneration: Sendable {
    private let run: @Sendable () async throws(GenerationError) -> GenerationResult

    public init(_ run: @escaping @Sendable () async throws(GenerationError) -> GenerationResult) {
        self.run = run
    }

    /// The result once the backend has stopped working on it.
    public func result() async throws(GenerationError) -> GenerationResult {
        try await run()
    }
}
