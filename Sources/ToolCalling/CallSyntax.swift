/// What a format contributes to `AnswerParser`: where its call markup starts and how it reads.
protocol CallSyntax: Sendable {
    /// Whether call markup starts at `p` (`lineStart`: `p` is the region's start, follows a line
    /// break or the previous call).
    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch
    /// Reads the calls whose markup starts at `p` (where `opener` matched), up to `end`.
    /// `ended`: the text stops at `end` for good.
    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun
}
