import Cancellation
import GenerationVocabulary

/// The life of one request in a session, as pure state:
/// waiting → admitted (its turn came) → generating → stopping → finished.
///
/// It settles the cancel-versus-complete race by one rule: whichever the session records first
/// wins. A stop recorded while the engine runs (or after it returned but before its result was
/// recorded) makes the turn `cancelled`; a result recorded first makes it `completed`, and a later
/// cancel just reports that.
struct TurnLifecycle: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case waiting
        case admitted
        case generating
        case stopping(CancellationReason)
        case finished(TurnOutcome.Status)
    }

    enum CancelAction: Sendable, Equatable {
        /// It was waiting: take it out of the queue; it ends now with no output.
        case removeFromQueue
        /// Its turn came but nothing ran yet: it ends now with no output; start the next one.
        case endBeforeStart
        /// It is generating: stop the engine and await its end.
        case stopGeneration
        /// A stop is already under way (with the first reason); await its end.
        case awaitStop
        /// Already ended; report how.
        case alreadyFinished(TurnOutcome.Status)
    }

    /// How a finished generation is recorded.
    enum Resolution: Sendable, Equatable {
        case completed
        case cancelled(CancellationReason)
        case failed
    }

    private(set) var phase: Phase = .waiting

    var stopReason: CancellationReason? {
        if case .stopping(let r) = phase { return r }
        return nil
    }

    mutating func cancel(_ reason: CancellationReason) -> CancelAction {
        switch phase {
        case .waiting:
            phase = .finished(.cancelled)
            return .removeFromQueue
        case .admitted:
            phase = .finished(.cancelled)
            return .endBeforeStart
        case .generating:
            phase = .stopping(reason)
            return .stopGeneration
        case .stopping:
            return .awaitStop
        case .finished(let status):
            return .alreadyFinished(status)
        }
    }

    /// Its turn came. False when it had already ended.
    mutating func admit() -> Bool {
        guard phase == .waiting else { return false }
        phase = .admitted
        return true
    }

    /// The engine is about to run it. False when it was cancelled in between.
    mutating func beginGeneration() -> Bool {
        guard phase == .admitted else { return false }
        phase = .generating
        return true
    }

    /// Its deadline passed while it waited in the session's queue: it ends failed, with no
    /// output. False when it was no longer waiting.
    mutating func expireWhileWaiting() -> Bool {
        guard phase == .waiting else { return false }
        phase = .finished(.failed)
        return true
    }

    /// A check before the generation could run failed (context overflow after the transcript grew).
    mutating func refuse() {
        phase = .finished(.failed)
    }

    /// The engine returned; decides what is recorded.
    mutating func engineReturned(_ result: Result<FinishReason, GenerationError>) -> Resolution {
        let resolution: Resolution
        switch (phase, result) {
        case (.stopping(let reason), _):
            // A recorded stop wins over a result that arrived after it, and over an error.
            resolution = .cancelled(reason)
        case (_, .success(.cancelled)):
            // Stopped by the engine itself (it is shutting down).
            resolution = .cancelled(.shutdown)
        case (_, .success):
            resolution = .completed
        case (_, .failure):
            resolution = .failed
        }
        switch resolution {
        case .completed: phase = .finished(.completed)
        case .cancelled: phase = .finished(.cancelled)
        case .failed: phase = .finished(.failed)
        }
        return resolution
    }
}
