/// Turns generated tokens into text one token at a time without ever splitting a UTF-8
/// character: bytes of a character that is still incomplete are held back until a later token
/// completes it.
///
/// Control tokens add nothing. Bytes that can never form a valid character become U+FFFD as
/// soon as that is certain; `finish()` flushes an incomplete tail the same way. SentencePiece
/// byte tokens (`<0xNN>`) are held back the same way until they form a character.
///
/// Unlike `Tokenizer.decode`, no leading space is dropped for SentencePiece models: generated
/// tokens continue the prompt, whose space prefix is not among them, so a first token `▁the`
/// streams as " the" (as llama.cpp's server streams it).
public struct StreamingDetokenizer: Sendable {
    private let tokenizer: Tokenizer
    private var pending: [UInt8] = []
    public private(set) var text: String = ""

    public init(tokenizer: Tokenizer) {
        self.tokenizer = tokenizer
    }

    /// The bytes `id` adds to the text, as `append` decodes it (control tokens add none).
    public func bytes(of id: Int32) -> [UInt8] {
        var out: [UInt8] = []
        tokenizer.appendPiece(id, renderSpecial: false, to: &out)
        return out
    }

    /// The bytes of `id` with control tokens spelled out, as a prompt writes them.
    public func spelledBytes(of id: Int32) -> [UInt8] {
        var out: [UInt8] = []
        tokenizer.appendPiece(id, renderSpecial: true, to: &out)
        return out
    }

    /// Adds one token and returns the text it completes (possibly empty).
    public mutating func append(_ id: Int32) -> String {
        tokenizer.appendPiece(id, renderSpecial: false, to: &pending)
        let complete = Self.completePrefixLength(pending)
        if complete == 0 { return "" }
        let chunk = String(decoding: pending[..<complete], as: UTF8.self)
        pending.removeFirst(complete)
        text += chunk
        return chunk
    }

    /// Returns held-back bytes of an unfinished character (as U+FFFD) and clears them; for the
    /// end of generation.
    public mutating func finish() -> String {
        if pending.isEmpty { return "" }
        let chunk = String(decoding: pending, as: UTF8.self)
        pending.removeAll()
        text += chunk
        return chunk
    }

    /// The length of the longest prefix of `bytes` that ends on a character boundary: all of it,
    /// except a trailing sequence that is a valid but unfinished start of a character.
    static func completePrefixLength(_ bytes: [UInt8]) -> Int {
        let count = bytes.count
        // An unfinished character is at most 3 bytes: look back for its lead byte.
        var start = count - 1
        while start >= 0 && start >= count - 3 && bytes[start] & 0xC0 == 0x80 {
            start -= 1
        }
        guard start >= 0 else { return count }
        let lead = bytes[start]
        let needed: Int
        switch lead {
        case 0xC2...0xDF: needed = 2
        case 0xE0...0xEF: needed = 3
        case 0xF0...0xF4: needed = 4
        default: return count  // ASCII, or a byte that starts nothing: decoding settles it now.
        }
        let available = count - start
        if available >= needed { return count }
        // Hold back only a tail that can still become a valid character.
        if available >= 2 {
            let second = bytes[start + 1]
            let secondValid: Bool
            switch lead {
            case 0xE0: secondValid = (0xA0...0xBF).contains(second)
            case 0xED: secondValid = (0x80...0x9F).contains(second)
            case 0xF0: secondValid = (0x90...0xBF).contains(second)
            case 0xF4: secondValid = (0x80...0x8F).contains(second)
            default: secondValid = true
            }
            if !secondValid { return count }
        }
        return start
    }
}
