/// `<tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call>`, one block per call.
struct HermesSyntax: CallSyntax {
    static let open = Array("<tool_call>".utf8)
    static let close = Array("</tool_call>".utf8)

    func opener(_ b: [UInt8], at p: Int, end: Int, lineStart: Bool) -> OpenerMatch {
        guard b[p] == 0x3C else { return .no }
        // The tag, then (after whitespace) the object: a tag followed by anything else is text.
        return ByteText.matchPattern([Self.open, nil, [0x7B]], in: b, at: p, end: end).0
    }

    func calls(_ b: [UInt8], at p: Int, end: Int, ended: Bool) -> CallRun {
        let q = ByteText.skipSpace(b, p + Self.open.count, end)
        let o = JSONScan.callObject(b, q, end, nameKeys: ["name"], argumentKeys: ["arguments", "parameters"])
        guard let objectEnd = o.end, !o.invalid else {
            return CallRun(calls: o.call(b, textEnd: end, complete: false).map { [$0] } ?? [], end: nil)
        }
        let e = ByteText.skipSpace(b, objectEnd, end)
        switch ByteText.match(Self.close, in: b, at: e, end: end) {
        case .match:
            return CallRun(calls: o.call(b, textEnd: end, complete: true).map { [$0] } ?? [], end: e + Self.close.count)
        case .partial where !ended:
            return CallRun(calls: o.call(b, textEnd: end, complete: false).map { [$0] } ?? [], end: nil)
        default:
            // No closing tag (a stop sequence took it, or the model left it out): the object closed the call.
            return CallRun(calls: o.call(b, textEnd: end, complete: true).map { [$0] } ?? [], end: objectEnd)
        }
    }
}
