/// Keys and values of the tokens processed so far, stored as f16 (as llama.cpp does by default),
/// laid out `[layer][position][kv head][head dim]`. One forward pass at a time per cache.
public final class KVCache: @unchecked Sendable {
    public let capacity: Int
    let layers: Int
    let kvDim: Int
    let keys: UnsafeMutablePointer<UInt16>
    let values: UnsafeMutablePointer<UInt16>
    /// The tokens whose keys and values the cache holds, in order (for prefix reuse).
    public private(set) var tokens: [Int32]

    public var count: Int { tokens.count }

    init(layers: Int, kvDim: Int, capacity: Int) {
        self.capacity = capacity
        self.layers = layers
        self.kvDim = kvDim
        let n = layers * capacity * kvDim
        keys = .allocate(capacity: max(1, n))
        values = .allocate(capacity: max(1, n))
        keys.initialize(repeating: 0, count: max(1, n))
        values.initialize(repeating: 0, count: max(1, n))
        tokens = []
        tokens.reserveCapacity(capacity)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Forgets every token from position `length` on; the first `length` stay valid.
    public func truncate(to length: Int) {
        let keep = max(0, length)
        if keep < tokens.count { tokens.removeLast(tokens.count - keep) }
    }

    func keys(layer: Int) -> UnsafeMutablePointer<UInt16> { keys + layer * capacity * kvDim }
    func values(layer: Int) -> UnsafeMutablePointer<UInt16> { values + layer * capacity * kvDim }

    func append(_ newTokens: ArraySlice<Int32>) { tokens.append(contentsOf: newTokens) }
}
