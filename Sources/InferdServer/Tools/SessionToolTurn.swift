import Engine

/// A session turn's tool calling, checked (`SessionTurns.toolTurn`) before the turn is admitted:
/// the results it gives, how its prompt and answer are read (nil when neither the turn nor the
/// transcript has tools) and the grammar keeping the tool rules.
struct SessionToolTurn: Sendable {
    var results: [ChatMessage]
    var reader: SessionToolReader?
    var constraint: (any GenerationConstraint)?

    /// The tracker every view of the answer reads (stream, body, transcript).
    var tracker: ToolAnswerTracker? { reader?.tracker }
}
