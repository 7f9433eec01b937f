/// `[f(a=1, b="x"), g()]` at the start of a line: a list of calls with keyword arguments.
struct PythonicSyntax: CallSyntax {
    static func isNameByte(_ c: UInt8) -> Bool {
        PythonicArguments.isIdentifier(c, first: false) || c == 0x2E || c == 0x2D
    }

    /// `[`, spaces, a name, spaces, `(`: where the next call's name ends and its `(` is, or how it failed.
    static func head(_ b: [UInt8], at p: Int, end: Int) -> (OpenerMatch, name: Range<Int>, paren: Int) {
        var q = ByteText.skipSpace(b, p, end)
        guard q < end else { return (.partial, q..<q, q) }
        guard PythonicArguments.isIdentifier(b[q], first: true) else { return (.no, q..<q, q) }
        let start = q
        while q < end, isNameByte(b[q]) { q += 1 }
        let name = start..<q
        q = ByteText.skipSpace(b, q, end)
        guard q < end else { return (.partial, name, q) }
        return (b[q] == 0x28 ? .match : .no, name, q)
    }

    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch {
        guard lineStart, b[p] == 0x5B else { return .no }
        return Self.head(b, at: p + 1, end: end).0
    }

    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun {
        var run = CallRun()
        var q = p + 1
        while true {
            q = ByteText.skipSpace(b, q, end)
            guard q < end else { return run }
            if b[q] == 0x5D {
                run.end = q + 1
                return run
            }
            if !run.calls.isEmpty {
                guard b[q] == 0x2C else { return run }
                q += 1
            }
            let (m, name, paren) = Self.head(b, at: q, end: end)
            guard m == .match else { return run }
            let (json, callEnd, _) = PythonicArguments.convert(b, from: paren + 1, end: end)
            run.calls.append(
                ParsedToolCall(name: ByteText.string(b, name), arguments: json, complete: callEnd != nil))
            guard let callEnd else { return run }
            q = callEnd
        }
    }
}
