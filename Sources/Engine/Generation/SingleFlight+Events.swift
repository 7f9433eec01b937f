extension SingleFlight {
    /// The same generation as an async sequence of events ending with `.finished`, shared like
    /// `generate`. Ending the iteration early (or cancelling the iterating Task) leaves the
    /// generation; it stops when its last subscriber has left.
    public func events(_ request: GenerationRequest) -> GenerationEvents {
        let (stream, continuation) = AsyncThrowingStream<GenerationStreamElement, Error>.makeStream()
        let onEvent: @Sendable (GenerationEvent) -> Void = { continuation.yield(.event($0)) }
        let onFinish: @Sendable (Result<GenerationResult, GenerationError>) -> Void = { outcome in
            switch outcome {
            case .success(let result):
                continuation.yield(.finished(result))
                continuation.finish()
            case .failure(let error):
                continuation.finish(throwing: error)
            }
        }
        let (subscriber, generation) =
            if let key = SingleFlightKey(request) {
                subscribe(key: key, request: request, onEvent: onEvent, onFinish: onFinish)
            } else {
                runAlone(request, onEvent: onEvent, onFinish: onFinish)
            }
        let leave: @Sendable () -> Void = { generation.leave(subscriber) }
        // A cancelled iterating Task ends the stream; a consumer that simply stops iterating is
        // noticed when its iterator goes away.
        continuation.onTermination = { _ in leave() }
        return GenerationEvents(stream: stream, abandon: AbandonToken(leave))
    }
}
