import GenerationVocabulary

/// A request's class, in the session's own queue (a background request starts only when no
/// interactive one waits) and then in the engine's queue, which applies the same order and may
/// park a running background generation for a waiting interactive one. One type, so the words
/// and their meaning cannot drift apart.
public typealias TurnPriority = GenerationPriority
