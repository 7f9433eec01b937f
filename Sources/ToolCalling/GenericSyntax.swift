/// `{"tool_calls": [{"name": "f", "arguments": {…}}, …]}` as the answer (at the start of a line).
struct GenericSyntax: CallSyntax {
    static let pattern: [[UInt8]?] = [[0x7B], nil, Array("\"tool_calls\"".utf8), nil, [0x3A], nil, [0x5B]]

    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch {
        guard lineStart, b[p] == 0x7B else { return .no }
        return ByteText.matchPattern(Self.pattern, in: b, at: p, end: end).0
    }

    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun {
        var run = CallRun()
        var q = ByteText.matchPattern(Self.pattern, in: b, at: p, end: end).1
        while true {
            q = ByteText.skipSpace(b, q, end)
            guard q < end else { return run }
            switch b[q] {
            case 0x5D:
                let e = ByteText.skipSpace(b, q + 1, end)
                if e < end, b[e] == 0x7D {
                    run.end = e + 1
                } else if e < end || ended {
                    run.end = q + 1
                }
                return run
            case 0x2C:
                q += 1
            case 0x7B:
                let o = JSONScan.callObject(b, q, end, nameKeys: ["name"], argumentKeys: ["arguments", "parameters"])
                guard let objectEnd = o.end, !o.invalid else {
                    if let call = o.call(b, textEnd: end, complete: false) { run.calls.append(call) }
                    return run
                }
                if let call = o.call(b, textEnd: end, complete: true) { run.calls.append(call) }
                q = objectEnd
            default:
                return run
            }
        }
    }
}
