/// The merge tables of a byte-level BPE model, shared by all copies of its `Tokenizer`.
///
/// BPE works on symbol ids rather than strings: every token is a symbol with the token's id,
/// and strings that only occur in merges (or single bytes that are not tokens) get ids from
/// `tokenCount` up, so a merge is one dictionary lookup on a pair of integers.
final class BPEVocabulary: Sendable {
    let tokenCount: Int
    /// The symbol for each single byte.
    let byteSymbols: [Int32]
    /// The bytes of each extra symbol (id `tokenCount + index`).
    let extraSymbolBytes: [[UInt8]]
    /// Keyed by `left << 32 | right`.
    let merges: [UInt64: BPEMergeRule]
    let unknownID: Int32?

    init(table: TokenTable, merges mergeStrings: [String]) throws {
        let tokens = table.texts
        tokenCount = tokens.count

        var symbolForText: [String: Int32] = [:]
        symbolForText.reserveCapacity(tokens.count + 1024)
        for (index, text) in tokens.enumerated() {
            // The last id wins when a spelling repeats, as in llama.cpp's token_to_id map.
            symbolForText[text] = Int32(index)
        }

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

        unknownID = table.types.firstIndex(of: .unknown).map { Int32($0) }
    }

    func mergeRule(_ left: Int32, _ right: Int32) -> BPEMergeRule? {
        merges[UInt64(UInt32(left)) << 32 | UInt64(UInt32(right))]
    }
}
