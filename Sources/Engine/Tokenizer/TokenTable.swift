/// What every tokenizer model knows about its vocabulary: spellings, kinds, the bytes each token
/// contributes to decoded text, lookup by spelling and the spellings matched before encoding.
/// Shared by all copies of a `Tokenizer`.
final class TokenTable: Sendable {
    /// A spelling cut out of raw text before the model encodes it.
    struct SpecialToken: Sendable {
        let bytes: [UInt8]
        let id: Int32
        /// User-defined tokens match even when special tokens are not parsed, as in llama.cpp.
        let alwaysMatched: Bool
    }

    let texts: [String]
    let types: [TokenType]
    /// The bytes each token contributes to decoded text (the model decides for normal and byte
    /// tokens; other kinds contribute their spelling).
    let pieces: ByteStore
    let lookup: TokenLookup
    /// Control, unknown and user-defined spellings, longest first (ties by id).
    let specialTokens: [SpecialToken]
    var count: Int { texts.count }

    /// - Parameter normalPiece: appends the decoded bytes of a normal, undefined or byte token.
    init(
        tokens: [String], tokenTypes rawTypes: [Int32], normalPiece: (String, TokenType, inout ByteStore) -> Void
    ) throws {
        guard !tokens.isEmpty else { throw TokenizerError.invalidVocabulary("no tokens") }
        guard rawTypes.isEmpty || rawTypes.count == tokens.count else {
            throw TokenizerError.invalidVocabulary("\(rawTypes.count) token types for \(tokens.count) tokens")
        }
        guard tokens.count < Int(Int32.max) / 2 else {
            throw TokenizerError.invalidVocabulary("too many tokens")
        }
        let types =
            rawTypes.isEmpty
            ? [TokenType](repeating: .normal, count: tokens.count)
            : rawTypes.map { TokenType(rawValue: $0) ?? .undefined }
        texts = tokens
        self.types = types
        var pieces = ByteStore()
        pieces.reserve(strings: tokens.count, bytes: tokens.reduce(0) { $0 + $1.utf8.count })
        var specials: [SpecialToken] = []
        for (index, text) in tokens.enumerated() {
            switch types[index] {
            case .normal, .undefined, .byte:
                normalPiece(text, types[index], &pieces)
            case .control, .unknown, .userDefined, .unused:
                pieces.append(text.utf8)
            }
            guard !text.isEmpty else { continue }
            switch types[index] {
            case .control, .unknown:
                specials.append(SpecialToken(bytes: Array(text.utf8), id: Int32(index), alwaysMatched: false))
            case .userDefined:
                specials.append(SpecialToken(bytes: Array(text.utf8), id: Int32(index), alwaysMatched: true))
            default: break
            }
        }
        self.pieces = pieces
        // llama.cpp spells an empty token "[EMPTY_<id>]" so that it can never match.
        lookup = TokenLookup(spellings: tokens.enumerated().map { $1.isEmpty ? "[EMPTY_\($0)]" : $1 })
        specialTokens = specials.sorted {
            $0.bytes.count > $1.bytes.count || ($0.bytes.count == $1.bytes.count && $0.id < $1.id)
        }
    }

    func type(_ id: Int32) -> TokenType? {
        id >= 0 && Int(id) < texts.count ? types[Int(id)] : nil
    }
}
