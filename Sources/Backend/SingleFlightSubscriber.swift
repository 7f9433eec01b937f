import Engine
import Foundation

/// One request's view of a shared generation: forwards its events in order and finishes it
/// exactly once.
///
/// Events reach a subscriber from two threads: the backend's (each new event) and the joining
/// request's (the replay of what it missed). Each delivery carries the whole progress so far, and
/// the subscriber forwards only what is newer than what it already sent, so whichever comes
/// first, the request sees `started` once, before any snapshot, and never an older
/// snapshot after a newer one. Forwarding and finishing share one lock, so after `finish`
/// nothing more is forwarded and a cancelled subscriber's result is exactly what it was shown.
/// The lock is recursive because `onEvent` may cancel the very request it serves (the
/// cancellation handler then finishes this subscriber on the same thread).
final class SingleFlightSubscriber: @unchecked Sendable {
    /// The label (request id) of the request whose generation this one joined; nil for the
    /// request that started it.
    let leaderLabel: String?
    private let promptTokens: Int
    private let onEvent: @Sendable (GenerationEvent) -> Void
    private let onFinish: @Sendable (Result<GenerationResult, GenerationError>) -> Void
    private let lock = NSRecursiveLock()
    private var finished = false
    private var promptForwarded = false
    private var lastSnapshotNumber = 0
    private var shownContent = ""
    private var shownTokens = 0

    init(
        leaderLabel: String?, promptTokens: Int, onEvent: @escaping @Sendable (GenerationEvent) -> Void,
        onFinish: @escaping @Sendable (Result<GenerationResult, GenerationError>) -> Void
    ) {
        self.leaderLabel = leaderLabel
        self.promptTokens = promptTokens
        self.onEvent = onEvent
        self.onFinish = onFinish
    }

    /// Forwards whatever of `progress` this request has not seen yet.
    func deliver(_ progress: SharedGeneration.Progress) {
        lock.lock()
        defer { lock.unlock() }
        if let prompt = progress.prompt, !promptForwarded, !finished {
            promptForwarded = true
            onEvent(prompt)
        }
        if let snapshot = progress.snapshot, snapshot.number > lastSnapshotNumber, !finished {
            lastSnapshotNumber = snapshot.number
            shownContent = snapshot.content
            shownTokens = snapshot.completionTokens
            onEvent(.snapshot(content: snapshot.content, completionTokens: snapshot.completionTokens))
        }
    }

    /// Passes on where the shared generation waits in the backend's queue (not replayed to
    /// later joiners: a position is only news while it holds).
    func deliverQueued(position: Int) {
        lock.lock()
        defer { lock.unlock() }
        if !finished && !promptForwarded { onEvent(.queued(position: position)) }
    }

    /// Ends this request with the shared generation's outcome.
    func finish(_ outcome: Result<GenerationResult, GenerationError>) {
        guard markFinished() else { return }
        onFinish(
            outcome.map { result in
                var own = result
                own.sharedFrom = leaderLabel
                return own
            })
    }

    /// Ends this request alone, as cancelled, while the generation goes on for the others: its
    /// answer is what it was shown, and no step was computed for it after its cancellation.
    func finishCancelled() {
        let shown = lock.withLock { () -> (content: String, tokens: Int)? in
            guard !finished else { return nil }
            finished = true
            return (shownContent, shownTokens)
        }
        guard let (content, tokens) = shown else { return }
        let result = GenerationResult(
            content: content, finishReason: .cancelled,
            usage: GenerationUsage(promptTokens: promptTokens, completionTokens: tokens, cachedTokens: 0),
            timings: GenerationTimings(
                promptMilliseconds: 0, generationMilliseconds: 0, promptTokensPerSecond: 0,
                generationTokensPerSecond: 0),
            tokens: [], stepsAfterCancel: 0, sharedFrom: leaderLabel)
        onFinish(.success(result))
    }

    private func markFinished() -> Bool {
        lock.withLock {
            defer { finished = true }
            return !finished
        }
    }
}
