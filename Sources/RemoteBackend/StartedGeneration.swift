import GenerationVocabulary

/// A generation started at submit (`OpenAIRemoteBackend.startNow`), held by the closure of its
/// `PendingGeneration`: when the last holder lets go before the generation ends (a requester
/// that failed before awaiting it), the Task is cancelled and the upstream connection closed.
/// Cancelling a finished Task does nothing.
final class StartedGeneration: Sendable {
    let task: Task<Result<GenerationResult, GenerationError>, Never>

    init(_ task: Task<Result<GenerationResult, GenerationError>, Never>) { self.task = task }

    deinit { task.cancel() }
}
