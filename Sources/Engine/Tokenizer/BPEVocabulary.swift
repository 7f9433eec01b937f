/// The immutable tables behind a `Tokenizer`, shared by all its copies.
///
/// BPE works on symbol ids rather than strings: every token is a symbol with the token's id,
/// and strings that only occur in merges (or single bytes that are not tokens) get ids from
/// `tokenCount` up, so a merge is one dictionary lookup on a pair of integers.
final class BPEVocabulary: Sendable {
    let tokenTexts: [String]
    let tokenTypes: [TokenType]
    /// Normal tokens: the bytes they stand for. Other tokens: the UTF-8 of their spelling.
    let tokenBytes: [[UInt8]]
    let tokenCount: Int
    /// The symbol for each single byte.
    let byteSymbols: [Int32]
    /// The bytes of each extra symbol (id `tokenCount + index`).
    let extraSymbolBytes: [[UInt8]]
    /// Keyed by `left << 32 | right`.
    let merges: [UInt64: BPEMergeRule]
    /// Spellings matched in raw text, longest first, with whether they are matched even when
    /// special tokens are not parsed (user-defined tokens, as llama.cpp does).
    let specialTokens: [(bytes: [UInt8], id: Int32, alwaysMatched: Bool)]
    let unknownID: Int32?

    init(tokens: [String], merges mergeStrings: [String], tokenTypes rawTypes: [Int32]) throws {
        guard !tokens.isEmpty else { throw TokenizerError.invalidVocabulary("no tokens") }
        guard rawTypes.isEmpty || rawTypes.count == tokens.count else {
            throw TokenizerError.invalidVocabulary(
                "\(rawTypes.count) token types for \(tokens.count) tokens")
        }
        guard tokens.count < Int(Int32.max) / 2 else {
            throw TokenizerError.invalidVocabulary("too many tokens")
        }
        let types =
            rawTypes.isEmpty
            ? [TokenType](repeating: .normal, count: tokens.count)
            : rawTypes.map { TokenType(rawValue: $0) ?? .undefined }
        tokenTexts = tokens
        tokenTypes = types
        tokenCount = tokens.count

        var symbolForText: [String: Int32] = [:]
        symbolForText.reserveCapacity(tokens.count + 1024)
        var bytesPerToken: [[UInt8]] = []
        bytesPerToken.reserveCapacity(tokens.count)
        for (index, text) in tokens.enumerated() {
            // Keep the first id when a spelling repeats, as llama.cpp's lookup does.
            if symbolForText[text] == nil { symbolForText[text] = Int32(index) }
            if types[index] == .normal || types[index] == .undefined {
                bytesPerToken.append(ByteLevelMapping.bytes(fromVocabularyText: text))
            } else {
                bytesPerToken.append(Array(text.utf8))
            }
        }
        tokenBytes = bytesPerToken

        var extras: [[UInt8]] = []
        func symbol(_ text: Substring) -> Int32 {
            let key = String(text)
            if let id = symbolForText[key] { return id }
            let id = Int32(tokens.count + extras.count)
            extras.append(ByteLevelMapping.bytes(fromVocabularyText: key))
            symbolForText[key] = id
            return id
        }
        byteSymbols = ByteLevelMapping.stringForByte.map { symbol(Substring($0)) }

        var rules: [UInt64: BPEMergeRule] = [:]
        rules.reserveCapacity(mergeStrings.count)
        for (rank, merge) in mergeStrings.enumerated() {
            // The separator is the first space after the first character: "Ġ t" is ("Ġ", "t").
            guard !merge.isEmpty,
                let separator = merge[merge.index(after: merge.startIndex)...].firstIndex(of: " ")
            else {
                throw TokenizerError.invalidVocabulary("merge \(rank) '\(merge)' has no separator")
            }
            let left = merge[..<separator]
            let right = merge[merge.index(after: separator)...]
            let leftID = symbol(left)
            let rightID = symbol(right)
            let resultID = symbol(Substring(String(left) + String(right)))
            let key = UInt64(UInt32(leftID)) << 32 | UInt64(UInt32(rightID))
            if rules[key] == nil {
                rules[key] = BPEMergeRule(rank: Int32(rank), result: resultID)
            }
        }
        merges = rules
        extraSymbolBytes = extras

        var specials: [(bytes: [UInt8], id: Int32, alwaysMatched: Bool)] = []
        for (index, type) in types.enumerated() where !tokens[index].isEmpty {
            switch type {
            case .control, .unknown: specials.append((Array(tokens[index].utf8), Int32(index), false))
            case .userDefined: specials.append((Array(tokens[index].utf8), Int32(index), true))
            default: break
            }
        }
        specialTokens = specials.sorted {
            $0.bytes.count > $1.bytes.count || ($0.bytes.count == $1.bytes.count && $0.id < $1.id)
        }
        unknownID = types.firstIndex(of: .unknown).map { Int32($0) }
    }

    func type(_ id: Int32) -> TokenType? {
        id >= 0 && Int(id) < tokenCount ? tokenTypes[Int(id)] : nil
    }

    func mergeRule(_ left: Int32, _ right: Int32) -> BPEMergeRule? {
        merges[UInt64(UInt32(left)) << 32 | UInt64(UInt32(right))]
    }
}
