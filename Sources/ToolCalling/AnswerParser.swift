/// The parsing every format shares: the reasoning split off, then each region (reasoning,
/// content) scanned for the format's call markup. See `ToolCallFormat` for the streaming rules.
enum AnswerParser {
    static let thinkOpen = Array("<think>".utf8)
    static let thinkClose = Array("</think>".utf8)

    static func parse(_ text: String, final: Bool, startsInReasoning: Bool, syntax: some CallSyntax)
        -> ParsedAnswer
    {
        let b = Array(text.utf8)
        var reasoningStart: Int?
        if startsInReasoning {
            reasoningStart = 0
        } else {
            let j = ByteText.skipSpace(b, 0, b.count)
            switch ByteText.match(thinkOpen, in: b, at: j, end: b.count) {
            case .match: reasoningStart = j + thinkOpen.count
            case .partial where !final: return ParsedAnswer(content: "")
            default: break
            }
        }
        guard let r = reasoningStart else {
            let (content, calls) = scan(b, 0..<b.count, ended: final, syntax: syntax)
            return ParsedAnswer(content: content, reasoning: nil, calls: calls)
        }
        if let k = ByteText.find(thinkClose, in: b, from: r, end: b.count) {
            let (reasoning, early) = scan(b, r..<k, ended: true, syntax: syntax)
            let (content, calls) = scan(b, (k + thinkClose.count)..<b.count, ended: final, syntax: syntax)
            return ParsedAnswer(content: content, reasoning: reasoning, calls: early + calls)
        }
        let held = final ? 0 : ByteText.partialSuffix(thinkClose, in: b, from: r, end: b.count)
        let (reasoning, calls) = scan(b, r..<(b.count - held), ended: final, syntax: syntax)
        return ParsedAnswer(content: "", reasoning: reasoning, calls: calls)
    }

    /// Whether `text` has closed its reasoning: `</think>` after a leading `<think>` (or anywhere,
    /// when the prompt opened the reasoning). Streaming: once true, it stays true.
    static func closesReasoning(_ text: String, startsInReasoning: Bool) -> Bool {
        let b = Array(text.utf8)
        var r = 0
        if !startsInReasoning {
            let j = ByteText.skipSpace(b, 0, b.count)
            guard case .match = ByteText.match(thinkOpen, in: b, at: j, end: b.count) else { return false }
            r = j + thinkOpen.count
        }
        return ByteText.find(thinkClose, in: b, from: r, end: b.count) != nil
    }

    /// The text of `region` outside call markup (pieces trimmed, joined by a line break) and its
    /// calls. A line start (for formats whose calls start a line) is the first non-whitespace
    /// character of the region or after a call, or the character right after a line break (not
    /// after a line break and spaces: so a grammar keeps free text from starting a call by
    /// refusing a line break followed by the opening character, and a leading space or opener).
    static func scan(_ b: [UInt8], _ region: Range<Int>, ended: Bool, syntax: some CallSyntax)
        -> (String, [ParsedToolCall])
    {
        var pieces: [String] = []
        var calls: [ParsedToolCall] = []
        var textStart = region.lowerBound
        func flush(_ end: Int) {
            let s = ByteText.trimmed(b, textStart..<end)
            if !s.isEmpty { pieces.append(s) }
        }
        var p = region.lowerBound
        var lineStart = true
        // Only whitespace since the region's start or the last call.
        var leading = true
        let end = region.upperBound
        while p < end {
            let c = b[p]
            if ByteText.isSpace(c) {
                lineStart = leading || c == 0x0A
                p += 1
                continue
            }
            switch syntax.opener(b, at: p, end: end, lineStart: lineStart) {
            case .match:
                flush(p)
                let run = syntax.calls(b, at: p, end: end, ended: ended)
                calls += run.calls
                guard let next = run.end else { return (pieces.joined(separator: "\n"), calls) }
                p = next
                textStart = next
                lineStart = true
                leading = true
                continue
            case .partial where !ended:
                flush(p)
                return (pieces.joined(separator: "\n"), calls)
            default:
                break
            }
            lineStart = false
            leading = false
            p += 1
        }
        flush(end)
        return (pieces.joined(separator: "\n"), calls)
    }
}
