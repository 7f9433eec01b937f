/// The names of a generation's events, in the order a stream carries them, as the wire spells
/// them (the raw values are SSE `event:` names): the engine's `queued`, `started` and
/// `snapshot`, then exactly one of the terminal events, chosen from the result or the error.
public enum GenerationEventName: String, Sendable, CaseIterable {
    case queued
    case started
    case snapshot
    /// It ended by a stop, its length or its deadline (`finish_reason` says which).
    case completed
    /// Its owner stopped it (the result's `reason` says why); not an error.
    case cancelled
    /// It ended without a result.
    case error
}
