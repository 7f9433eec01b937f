/// `{"name": "f", "parameters": {…}}` at the start of a line or after `<|python_tag|>`; several
/// calls separated by `;` (or each on its own line). After the tag also a built-in tool's call,
/// `brave_search.call(query="…")`, its keyword arguments converted to JSON as `pythonic`'s.
struct Llama3JSONSyntax: CallSyntax {
    static let pythonTag = Array("<|python_tag|>".utf8)
    static let namePattern: [[UInt8]?] = [[0x7B], nil, Array("\"name\"".utf8)]
    static let typedPattern: [[UInt8]?] = [
        [0x7B], nil, Array("\"type\"".utf8), nil, [0x3A], nil, Array("\"function\"".utf8), nil, [0x2C], nil,
        Array("\"name\"".utf8),
    ]

    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch {
        if b[p] == 0x3C {
            let (m, q) = ByteText.matchPattern([Self.pythonTag, nil], in: b, at: p, end: end)
            guard m == .match else { return m }
            guard q < end else { return .partial }
            return b[q] == 0x7B ? objectOpener(b, at: q, end: end) : Self.builtin(b, at: q, end: end).0
        }
        return lineStart ? objectOpener(b, at: p, end: end) : .no
    }

    static let dotCall = Array(".call(".utf8)

    /// A built-in tool's call after the tag, `brave_search.call(query="…")`: whether it starts at
    /// `p`, the name, and where its arguments start.
    static func builtin(_ b: [UInt8], at p: Int, end: Int) -> (OpenerMatch, name: Range<Int>, arguments: Int) {
        var q = p
        while q < end, PythonicArguments.isIdentifier(b[q], first: q == p) { q += 1 }
        guard q > p else { return (.no, p..<p, p) }
        let m = ByteText.match(dotCall, in: b, at: q, end: end)
        return (m, p..<q, q + dotCall.count)
    }

    func objectOpener(_ b: [UInt8], at p: Int, end: Int) -> OpenerMatch {
        let plain = ByteText.matchPattern(Self.namePattern, in: b, at: p, end: end).0
        let typed = ByteText.matchPattern(Self.typedPattern, in: b, at: p, end: end).0
        if plain == .match || typed == .match { return .match }
        return plain == .partial || typed == .partial ? .partial : .no
    }

    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun {
        var q = p
        if b[q] == 0x3C { q = ByteText.skipSpace(b, q + Self.pythonTag.count, end) }
        var run = CallRun()
        if b[q] != 0x7B {
            let (_, name, start) = Self.builtin(b, at: q, end: end)
            let (json, callEnd, _) = PythonicArguments.convert(b, from: start, end: end)
            run.calls = [ParsedToolCall(name: ByteText.string(b, name), arguments: json, complete: callEnd != nil)]
            run.end = callEnd
            return run
        }
        while true {
            let o = JSONScan.callObject(
                b, q, end, nameKeys: ["name"], argumentKeys: ["parameters", "arguments"])
            guard let objectEnd = o.end, !o.invalid else {
                if let call = o.call(b, textEnd: end, complete: false) { run.calls.append(call) }
                return run
            }
            if let call = o.call(b, textEnd: end, complete: true) { run.calls.append(call) }
            var e = ByteText.skipSpace(b, objectEnd, end)
            if e < end, b[e] == 0x3B { e = ByteText.skipSpace(b, e + 1, end) }
            if e == end, !ended { return run }  // a `;` and the next call may follow
            guard e < end, b[e] == 0x7B, objectOpener(b, at: e, end: end) != .no else {
                run.end = objectEnd
                return run
            }
            if objectOpener(b, at: e, end: end) == .partial {
                if ended {
                    run.end = objectEnd
                }
                return run
            }
            q = e
        }
    }
}
