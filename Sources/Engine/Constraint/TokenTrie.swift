/// The vocabulary's tokens as a trie over the bytes they put in the output, laid out in
/// pre-order: node i's subtree is `i..<subtreeEnd[i]`, so a walk that rejects a byte skips the
/// whole subtree with one jump. Only tokens that spell output text are in it (normal, byte and
/// user-defined tokens with at least one byte); control, unknown and unused tokens never are, so
/// a constraint never lets them through. Built once per vocabulary and shared.
public struct TokenTrie: Sendable {
    /// Per node: the byte on the edge into it, its depth (bytes from the root, 1 for the first
    /// level), where its subtree ends, and its tokens `tokenIDs[tokenStart[i]..<tokenEnd[i]]`.
    let bytes: [UInt8]
    let depths: [UInt16]
    let subtreeEnd: [Int32]
    let tokenStart: [Int32]
    let tokenEnd: [Int32]
    let tokenIDs: [Int32]
    public let vocabularySize: Int
    /// Tokens that end the output (allowed only where the grammar can end).
    public let endOfGeneration: [Int32]
    /// The longest token, in bytes.
    public let maxDepth: Int
    /// Every allowed token's bytes, by id: `flatBytes[byteOffsets[id]..<byteOffsets[id + 1]]`;
    /// `allowedToken[id]` false for tokens not in the trie.
    let flatBytes: [UInt8]
    let byteOffsets: [Int32]
    let allowedToken: [Bool]
    /// The allowed tokens with a `"` in their bytes, ascending: the only ones that can close a
    /// JSON key (`JSONKeyTracker`), listed once here rather than by every constraint.
    public let quoteTokens: [Int32]
    /// The vocabulary seen through grammar units (see `UnitTable`), built when first needed.
    let unitTables = UnitTableCache()

    public var nodeCount: Int { bytes.count }
    public var tokenCount: Int { tokenIDs.count }

    /// - Parameters:
    ///   - tokens: each token's output bytes, by id; nil for tokens never allowed.
    ///   - endOfGeneration: ids that end the answer.
    public init(tokens: [[UInt8]?], endOfGeneration: Set<Int32>) {
        vocabularySize = tokens.count
        self.endOfGeneration = endOfGeneration.sorted()
        var entries: [(bytes: [UInt8], id: Int32)] = []
        var flat: [UInt8] = []
        var offsets: [Int32] = [0]
        var allowedToken = [Bool](repeating: false, count: tokens.count)
        var quoteTokens: [Int32] = []
        for (id, b) in tokens.enumerated() {
            defer { offsets.append(Int32(flat.count)) }
            guard let b, !b.isEmpty, b.count < Int(UInt16.max), !endOfGeneration.contains(Int32(id)) else { continue }
            entries.append((b, Int32(id)))
            flat += b
            allowedToken[id] = true
            if b.contains(0x22) { quoteTokens.append(Int32(id)) }
        }
        self.quoteTokens = quoteTokens
        flatBytes = flat
        byteOffsets = offsets
        self.allowedToken = allowedToken
        entries.sort { $0.bytes.lexicographicallyPrecedes($1.bytes) || ($0.bytes == $1.bytes && $0.id < $1.id) }
        var bytes: [UInt8] = []
        var depths: [UInt16] = []
        var subtreeEnd: [Int32] = []
        var tokenStart: [Int32] = []
        var tokenEnd: [Int32] = []
        var ids: [Int32] = []
        // path[d] is the node at depth d + 1 on the current path.
        var path: [Int] = []
        var previous: [UInt8] = []
        var maxDepth = 0
        for entry in entries {
            let b = entry.bytes
            var common = 0
            while common < min(b.count, previous.count) && b[common] == previous[common] { common += 1 }
            // Close the nodes deeper than the shared prefix.
            while path.count > common {
                subtreeEnd[path.removeLast()] = Int32(bytes.count)
            }
            for d in common..<b.count {
                path.append(bytes.count)
                bytes.append(b[d])
                depths.append(UInt16(d + 1))
                subtreeEnd.append(0)
                tokenStart.append(Int32(ids.count))
                tokenEnd.append(Int32(ids.count))
            }
            let last = path[b.count - 1]
            if tokenEnd[last] != Int32(ids.count) {
                // A repeated spelling whose node is not the newest: cannot happen in sorted order.
                preconditionFailure("token trie: entries out of order")
            }
            ids.append(entry.id)
            tokenEnd[last] = Int32(ids.count)
            maxDepth = max(maxDepth, b.count)
            previous = b
        }
        while let n = path.popLast() { subtreeEnd[n] = Int32(bytes.count) }
        self.bytes = bytes
        self.depths = depths
        self.subtreeEnd = subtreeEnd
        self.tokenStart = tokenStart
        self.tokenEnd = tokenEnd
        self.tokenIDs = ids
        self.maxDepth = maxDepth
    }

    /// The node arrays seen through buffer pointers, for the mask walks: their loops index them
    /// as plain loads (no array retains, uniqueness or bounds checks per node).
    struct Nodes {
        let count: Int
        let bytes: UnsafeBufferPointer<UInt8>
        let depths: UnsafeBufferPointer<UInt16>
        let subtreeEnd: UnsafeBufferPointer<Int32>
        let tokenStart: UnsafeBufferPointer<Int32>
        let tokenEnd: UnsafeBufferPointer<Int32>
        let tokenIDs: UnsafeBufferPointer<Int32>
    }

    func withNodes<R>(_ body: (Nodes) -> R) -> R {
        bytes.withUnsafeBufferPointer { bytes in
            depths.withUnsafeBufferPointer { depths in
                subtreeEnd.withUnsafeBufferPointer { subtreeEnd in
                    tokenStart.withUnsafeBufferPointer { tokenStart in
                        tokenEnd.withUnsafeBufferPointer { tokenEnd in
                            tokenIDs.withUnsafeBufferPointer { tokenIDs in
                                body(
                                    Nodes(
                                        count: bytes.count, bytes: bytes, depths: depths, subtreeEnd: subtreeEnd,
                                        tokenStart: tokenStart, tokenEnd: tokenEnd, tokenIDs: tokenIDs))
                            }
                        }
                    }
                }
            }
        }
    }

    /// The bytes a token puts in the output; nil for a token the trie leaves out.
    public func tokenBytes(_ id: Int32) -> ArraySlice<UInt8>? {
        guard id >= 0, Int(id) < allowedToken.count, allowedToken[Int(id)] else { return nil }
        return flatBytes[Int(byteOffsets[Int(id)])..<Int(byteOffsets[Int(id) + 1])]
    }

    /// The trie of a model's vocabulary: each token's decoded bytes (byte-fallback `<0xNN>`
    /// tokens are their byte, byte-level spellings are decoded), control/unknown/unused left out.
    public init(tokenizer: Tokenizer, endOfGeneration: Set<Int32>) {
        var tokens: [[UInt8]?] = []
        tokens.reserveCapacity(tokenizer.vocabularySize)
        for id in 0..<Int32(tokenizer.vocabularySize) {
            switch tokenizer.table.type(id) {
            case .normal, .byte, .userDefined, .undefined:
                tokens.append(tokenizer.tokenBytes(id))
            default:
                tokens.append(nil)
            }
        }
        self.init(tokens: tokens, endOfGeneration: endOfGeneration.union(tokenizer.endOfGenerationIDs))
    }

    /// The part of `trie` holding only the tokens `keeping` marks: its nodes filtered in order
    /// (a node stays when a kept token is in its subtree), so no sort; for walks only (its
    /// `tokenBytes` answers nil).
    init(subsetOf trie: TokenTrie, keeping: [Bool]) {
        let n = trie.bytes.count
        var parent = [Int32](repeating: -1, count: n)
        var lastAtDepth = [Int32](repeating: -1, count: trie.maxDepth + 1)
        for i in 0..<n {
            let d = Int(trie.depths[i])
            parent[i] = d > 1 ? lastAtDepth[d - 1] : -1
            lastAtDepth[d] = Int32(i)
        }
        var kept = [Bool](repeating: false, count: n)
        for i in stride(from: n - 1, through: 0, by: -1) {
            if !kept[i] {
                for t in Int(trie.tokenStart[i])..<Int(trie.tokenEnd[i]) where keeping[Int(trie.tokenIDs[t])] {
                    kept[i] = true
                    break
                }
            }
            if kept[i] && parent[i] >= 0 { kept[Int(parent[i])] = true }
        }
        // before[i]: kept nodes before node i, the new index of the first kept node at or after i.
        var before = [Int32](repeating: 0, count: n + 1)
        for i in 0..<n { before[i + 1] = before[i] + (kept[i] ? 1 : 0) }
        var bytes: [UInt8] = []
        var depths: [UInt16] = []
        var subtreeEnd: [Int32] = []
        var tokenStart: [Int32] = []
        var tokenEnd: [Int32] = []
        var ids: [Int32] = []
        var maxDepth = 0
        for i in 0..<n where kept[i] {
            bytes.append(trie.bytes[i])
            depths.append(trie.depths[i])
            subtreeEnd.append(before[Int(trie.subtreeEnd[i])])
            tokenStart.append(Int32(ids.count))
            for t in Int(trie.tokenStart[i])..<Int(trie.tokenEnd[i]) where keeping[Int(trie.tokenIDs[t])] {
                ids.append(trie.tokenIDs[t])
            }
            tokenEnd.append(Int32(ids.count))
            maxDepth = max(maxDepth, Int(trie.depths[i]))
        }
        self.bytes = bytes
        self.depths = depths
        self.subtreeEnd = subtreeEnd
        self.tokenStart = tokenStart
        self.tokenEnd = tokenEnd
        self.tokenIDs = ids
        self.maxDepth = maxDepth
        vocabularySize = trie.vocabularySize
        endOfGeneration = trie.endOfGeneration
        flatBytes = []
        byteOffsets = []
        allowedToken = []
        quoteTokens = []
    }
}
