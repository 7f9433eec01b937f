/// `{"name": "f", "parameters": {…}}` at the start of a line or after `<|python_tag|>`; several
/// calls separated by `;` (or each on its own line).
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
            return q == end ? .partial : objectOpener(b, at: q, end: end)
        }
        return lineStart ? objectOpener(b, at: p, end: end) : .no
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
