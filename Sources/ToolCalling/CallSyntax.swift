/// What a format contributes to `AnswerParser`: where its call markup starts and how it reads.
protocol CallSyntax: Sendable {
    /// Whether call markup starts at `p` (`lineStart`: `p` is the region's start, follows a line
    /// break or the previous call).
    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch
    /// Reads the calls whose markup starts at `p` (where `opener` matched), up to `end`.
    /// `ended`: the text stops at `end` for good.
    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun
}

/// The calls one piece of markup holds and where the text goes on after it.
struct CallRun {
    var calls: [ParsedToolCall] = []
    /// Just past the markup; nil: the markup runs to the end of the text (open, or malformed,
    /// which swallows the rest of its region).
    var end: Int?
}
