public enum GenerationStreamElement: Sendable {
    case event(GenerationEvent)
    case finished(GenerationResult)
}

/// The events of one generation. Leaving the loop early, or cancelling the Task that
/// iterates, cancels the generation.
public struct GenerationEvents: AsyncSequence, Sendable {
    public typealias Element = GenerationStreamElement
    let stream: AsyncThrowingStream<GenerationStreamElement, Error>
    let abandon: AbandonToken

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<GenerationStreamElement, Error>.AsyncIterator
        let abandon: AbandonToken

        public mutating func next() async throws -> GenerationStreamElement? {
            try await base.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), abandon: abandon)
    }
}
