/// A line format's calls, also inside a Markdown code fence (```` ```json ````, ```` ```tool_code ````
/// …), which models taught no format often add: the fence line must end right before the calls'
/// opener, so free text that a grammar keeps from having a line starting with the opener cannot
/// hold a fenced call either. The closing fence after the calls is markup too.
struct FencedSyntax<Inner: CallSyntax>: CallSyntax {
    let inner: Inner
    static var fence: [UInt8] { Array("```".utf8) }

    /// Where the calls start after a fence line at `p` (```` ``` ````, a language word, a line break).
    func head(_ b: [UInt8], at p: Int, end: Int) -> (OpenerMatch, Int) {
        let m = ByteText.match(Self.fence, in: b, at: p, end: end)
        guard m == .match else { return (m, p) }
        var q = p + Self.fence.count
        while q < end, PythonicArguments.isIdentifier(b[q], first: false) { q += 1 }
        guard q < end else { return (.partial, q) }
        return b[q] == 0x0A ? (.match, q + 1) : (.no, q)
    }

    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch {
        guard b[p] == 0x60 else { return inner.opener(b, at: p, end: end, lineStart: lineStart) }
        guard lineStart else { return .no }
        let (m, q) = head(b, at: p, end: end)
        guard m == .match else { return m }
        return q < end ? inner.opener(b, at: q, end: end, lineStart: true) : .partial
    }

    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun {
        guard b[p] == 0x60 else { return inner.calls(b, at: p, end: end, ended: ended) }
        var run = inner.calls(b, at: head(b, at: p, end: end).1, end: end, ended: ended)
        guard let e = run.end else { return run }
        let q = ByteText.skipSpace(b, e, end)
        switch ByteText.match(Self.fence, in: b, at: q, end: end) {
        case .match: run.end = q + Self.fence.count
        case .partial where !ended: run.end = nil  // the closing fence may be coming
        default: break
        }
        return run
    }
}
