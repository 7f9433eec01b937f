#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keys and values of the tokens processed so far, laid out `[layer][position][kv head][head dim]`
/// in f16 (as llama.cpp stores them by default) or in q8_0 blocks, one row of blocks per layer and
/// position (`KVCacheType`). One forward pass at a time per cache.
///
/// The storage is an anonymous memory mapping, never written at creation: the system hands out
/// zeroed pages on first touch, so a cache sized for a request's whole budget (prompt plus
/// `max_tokens`) is resident only for the positions the request actually reaches, and
/// `munmap` returns it all on release (a malloc'd block could stay in the allocator's heap).
public final class KVCache: @unchecked Sendable {
    public let capacity: Int
    public let type: KVCacheType
    let layers: Int
    let kvDim: Int
    /// Bytes of one layer's keys (or values) for one position.
    let bytesPerPosition: Int
    let keys: UnsafeMutableRawPointer
    let values: UnsafeMutableRawPointer
    private let mapping: UnsafeMutableRawPointer
    private let mappedBytes: Int
    /// The tokens whose keys and values the cache holds, in order (for prefix reuse).
    public private(set) var tokens: [Int32]

    public var count: Int { tokens.count }

    init(layers: Int, kvDim: Int, capacity: Int, type: KVCacheType = .f16) {
        self.capacity = capacity
        self.type = type
        self.layers = layers
        self.kvDim = kvDim
        bytesPerPosition = type.bytesPerPosition(kvDim: kvDim)
        let half = max(1, layers * capacity * bytesPerPosition)
        // Values start on a page of their own, so each half's pages are only its own rows.
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let halfPages = (half + page - 1) / page * page
        mappedBytes = 2 * halfPages
        guard let raw = mmap(nil, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            raw != MAP_FAILED
        else { fatalError("KV cache: mmap of \(mappedBytes) bytes failed, errno \(errno)") }
        mapping = raw
        keys = raw
        values = raw + halfPages
        tokens = []
        tokens.reserveCapacity(capacity)
    }

    deinit {
        munmap(mapping, mappedBytes)
    }

    /// Forgets every token from position `length` on; the first `length` stay valid.
    public func truncate(to length: Int) {
        let keep = max(0, length)
        if keep < tokens.count { tokens.removeLast(tokens.count - keep) }
    }

    /// One layer's keys: f16 values, or q8_0 blocks seen as 16-bit words (the kernels' pointer type).
    func keys(layer: Int) -> UnsafeMutablePointer<UInt16> {
        (keys + layer * capacity * bytesPerPosition).assumingMemoryBound(to: UInt16.self)
    }
    func values(layer: Int) -> UnsafeMutablePointer<UInt16> {
        (values + layer * capacity * bytesPerPosition).assumingMemoryBound(to: UInt16.self)
    }

    func append(_ newTokens: ArraySlice<Int32>) { tokens.append(contentsOf: newTokens) }

    /// Copies the first `count` tokens' keys and values of `source` (same shape and type) into
    /// this empty cache, layer by layer.
    func copyPrefix(_ count: Int, of source: KVCache) {
        precondition(
            tokens.isEmpty && count <= source.count && count <= capacity && type == source.type
                && layers == source.layers && kvDim == source.kvDim, "KV cache: prefix copy between unlike caches")
        let bytes = count * bytesPerPosition
        for layer in 0..<layers {
            let to = layer * capacity * bytesPerPosition
            let from = layer * source.capacity * bytesPerPosition
            memcpy(keys + to, source.keys + from, bytes)
            memcpy(values + to, source.values + from, bytes)
        }
        tokens.append(contentsOf: source.tokens[0..<count])
    }

    /// Bytes of the cache's storage resident in memory right now (mincore over its mapping);
    /// nil where the system cannot say.
    func residentBytes() -> Int? {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = mappedBytes / page
        var vector = [UInt8](repeating: 0, count: pages)
        #if canImport(Glibc)
            let status = vector.withUnsafeMutableBufferPointer { mincore(mapping, mappedBytes, $0.baseAddress) }
        #else
            let status = vector.withUnsafeMutableBufferPointer {
                mincore(
                    mapping, mappedBytes, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self))
            }
        #endif
        guard status == 0 else { return nil }
        return vector.reduce(0) { $0 + Int($1 & 1) } * page
    }
}
