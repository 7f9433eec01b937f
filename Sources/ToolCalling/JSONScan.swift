import StructuredOutput

/// Finds where JSON values end in text that may stop anywhere, without building them.
enum JSONScan {
    enum Result: Equatable {
        /// The value ends before this index.
        case complete(Int)
        /// The text ends inside the value.
        case incomplete
        case invalid
    }

    /// The string starting at `p` (a quote).
    static func string(_ b: [UInt8], _ p: Int, _ end: Int) -> Result {
        var q = p + 1
        while q < end {
            switch b[q] {
            case 0x22: return .complete(q + 1)
            case 0x5C: q += 2
            default: q += 1
            }
        }
        return .incomplete
    }

    /// The value starting at `p`. Containers are followed by their brackets and strings only
    /// (tolerant: the grammar, not this, is what keeps JSON valid).
    static func value(_ b: [UInt8], _ p: Int, _ end: Int) -> Result {
        guard p < end else { return .incomplete }
        switch b[p] {
        case 0x22: return string(b, p, end)
        case 0x7B, 0x5B:
            var depth = 0
            var q = p
            while q < end {
                switch b[q] {
                case 0x22:
                    guard case .complete(let e) = string(b, q, end) else { return .incomplete }
                    q = e
                    continue
                case 0x7B, 0x5B: depth += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    if depth == 0 { return .complete(q + 1) }
                default: break
                }
                q += 1
            }
            return .incomplete
        default:
            var q = p
            while q < end, isScalarByte(b[q]) { q += 1 }
            if q == p { return .invalid }
            return q == end ? .incomplete : .complete(q)
        }
    }

    /// Letters, digits, `.`, `+`, `-`: what numbers, `true`, `false` and `null` are made of.
    static func isScalarByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x2B
            || c == 0x2D
    }

    /// The decoded text of the complete JSON string `b[range]`.
    static func decodeString(_ b: [UInt8], _ range: Range<Int>) -> String? {
        (try? JSONParser.parse(bytes: Array(b[range])))?.stringValue
    }

    /// A call object (`{"name": …, "arguments": …}`) starting at `p` (a `{`), as far as the text goes.
    struct CallObject {
        var name: String?
        var argumentsStart: Int?
        var argumentsEnd: Int?
        /// Just past the closing brace; nil while open.
        var end: Int?
        var invalid = false

        /// The call, once its name is known; `complete` as the caller decides.
        func call(_ b: [UInt8], textEnd: Int, complete: Bool) -> ParsedToolCall? {
            guard let name else { return nil }
            let arguments: String
            if let start = argumentsStart {
                arguments = ByteText.string(b, start..<(argumentsEnd ?? textEnd))
            } else {
                arguments = end == nil ? "" : "{}"
            }
            return ParsedToolCall(name: name, arguments: arguments, complete: complete)
        }
    }

    static func callObject(
        _ b: [UInt8], _ p: Int, _ end: Int, nameKeys: Set<String>, argumentKeys: Set<String>
    ) -> CallObject {
        var o = CallObject()
        var q = p + 1
        while true {
            q = ByteText.skipSpace(b, q, end)
            guard q < end else { return o }
            if b[q] == 0x7D {
                o.end = q + 1
                return o
            }
            if b[q] == 0x2C {
                q += 1
                continue
            }
            guard b[q] == 0x22 else {
                o.invalid = true
                return o
            }
            guard case .complete(let keyEnd) = string(b, q, end) else { return o }
            let key = decodeString(b, q..<keyEnd) ?? ""
            q = ByteText.skipSpace(b, keyEnd, end)
            guard q < end else { return o }
            guard b[q] == 0x3A else {
                o.invalid = true
                return o
            }
            q = ByteText.skipSpace(b, q + 1, end)
            guard q < end else { return o }
            let isArguments = argumentKeys.contains(key) && o.argumentsStart == nil
            if isArguments { o.argumentsStart = q }
            switch value(b, q, end) {
            case .complete(let e):
                if nameKeys.contains(key), o.name == nil, b[q] == 0x22 { o.name = decodeString(b, q..<e) }
                if isArguments { o.argumentsEnd = e }
                q = e
            case .incomplete: return o
            case .invalid:
                o.invalid = true
                return o
            }
        }
    }
}
