/// Where a JSON lexer is between and inside strings: the part of its state that following the
/// output and probing a token share (`JSONKeyTracker`).
struct JSONLexState {
    var inString = false
    var escape = false
    /// The string being written is a key.
    var isKey = false
    /// The next string in the innermost object is a key (after `{` or `,`).
    var expectKey = false

    /// Takes byte `c` of a string; true when it is the closing quote, which ends the string.
    mutating func endsString(_ c: UInt8) -> Bool {
        if escape {
            escape = false
        } else if c == 0x5C {
            escape = true
        } else if c == 0x22 {
            inString = false
            return true
        }
        return false
    }

    /// Takes byte `c` outside strings, `innermost` being the innermost open container's kind once
    /// `c` has opened or closed one (`JSONKeyTracker.object`, `.array`, or 0 for none).
    mutating func structural(_ c: UInt8, innermost: UInt8) {
        switch c {
        case 0x7B, 0x5B: expectKey = c == 0x7B
        case 0x7D, 0x5D: expectKey = false
        case 0x2C: expectKey = innermost == JSONKeyTracker.object
        case 0x22:
            inString = true
            isKey = expectKey && innermost == JSONKeyTracker.object
            expectKey = false
        default: break
        }
    }
}
