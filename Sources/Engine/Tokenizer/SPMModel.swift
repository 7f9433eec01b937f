/// SentencePiece (`tokenizer.ggml.model = llama`) as llama.cpp runs it.
///
/// Spaces become `▁` (U+2581), with one put in front of a stretch that starts the text or
/// follows a special token when `add_space_prefix` is set. The stretch starts as one symbol per
/// character; the adjacent pair whose concatenation is the token with the highest score merges
/// first (ties: leftmost), until no pair is a token. A remaining character that is not a token
/// is spelled with its byte tokens `<0xNN>`.
final class SPMModel: TokenizerModel {
    let table: TokenTable
    let scores: [Float]
    let addsSpacePrefix: Bool
    /// The token of each byte value: `<0xNN>`, else the byte itself as a token, else unknown.
    let byteTokens: [Int32?]
    var addsBOSByDefault: Bool { true }

    /// - Parameters:
    ///   - scores: `tokenizer.ggml.scores` (empty means all zero).
    ///   - unknownID: `tokenizer.ggml.unknown_token_id`, used for a byte without a token.
    init(tokens: [String], scores: [Float], tokenTypes: [Int32], addsSpacePrefix: Bool, unknownID: Int32?) throws {
        guard scores.isEmpty || scores.count == tokens.count else {
            throw TokenizerError.invalidVocabulary("\(scores.count) scores for \(tokens.count) tokens")
        }
        table = try TokenTable(tokens: tokens, tokenTypes: tokenTypes) { text, type, pieces in
            if type == .byte {
                pieces.append(Self.byteValue(text).map { [$0] } ?? [])
            } else {
                Self.appendUnescapingSpaces(text, to: &pieces)
            }
        }
        self.scores = scores.isEmpty ? [Float](repeating: 0, count: tokens.count) : scores
        self.addsSpacePrefix = addsSpacePrefix
        let table = table
        byteTokens = (0..<256).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            let name = "<0x" + (byte < 16 ? "0" : "") + hex + ">"
            return table.lookup.id(name) ?? table.lookup.id([UInt8(byte)]) ?? unknownID
        }
    }

    func encode(
        _ text: UnsafeBufferPointer<UInt8>, followsSpecial: Bool, scratch: inout EncodingScratch,
        into output: inout [Int32]
    ) {
        // Escape spaces to "▁" (E2 96 81), with the prefix space when it applies.
        var escaped: [UInt8] = []
        swap(&escaped, &scratch.bytes)  // reuse the buffer without a copy-on-write copy
        escaped.removeAll(keepingCapacity: true)
        if addsSpacePrefix && followsSpecial { escaped.append(contentsOf: Self.spaceMark) }
        for byte in text {
            if byte == 0x20 {
                escaped.append(contentsOf: Self.spaceMark)
            } else {
                escaped.append(byte)
            }
        }
        escaped.withUnsafeBufferPointer { bytes in
            scratch.spm.encode(bytes, model: self, into: &output)
        }
        scratch.bytes = escaped
    }

    static let spaceMark: [UInt8] = [0xE2, 0x96, 0x81]

    /// Appends a normal token's decoded bytes: its spelling with every `▁` turned back into a
    /// space (written straight into the store: Gemma has 255,474 normal tokens).
    static func appendUnescapingSpaces(_ text: String, to pieces: inout ByteStore) {
        var text = text
        text.withUTF8 { utf8 in
            var index = 0
            while index < utf8.count {
                if utf8[index] == 0xE2 && index + 2 < utf8.count && utf8[index + 1] == 0x96 && utf8[index + 2] == 0x81 {
                    pieces.appendPartial(0x20)
                    index += 3
                } else {
                    pieces.appendPartial(utf8[index])
                    index += 1
                }
            }
        }
        pieces.closeString()
    }

    /// The byte a `<0xNN>` token stands for.
    static func byteValue(_ text: String) -> UInt8? {
        guard text.utf8.count == 6, text.hasPrefix("<0x"), text.hasSuffix(">") else { return nil }
        return UInt8(text.dropFirst(3).dropLast(), radix: 16)
    }
}
