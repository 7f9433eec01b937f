/// The calls one piece of markup holds and where the text goes on after it.
struct CallRun {
    var calls: [ParsedToolCall] = []
    /// Just past the markup; nil: the markup runs to the end of the text (open, or malformed,
    /// which swallows the rest of its region).
    var end: Int?
}
