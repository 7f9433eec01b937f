import Testing

@testable import Engine

/// A cache is sized for a request's whole budget, but only the positions the request reaches may
/// take memory: the storage is mapped lazily (see `KVCache`). Counted with mincore over the
/// cache's own mapping, so other tests' allocations cannot disturb the figures.
@Suite struct KVCacheMemoryTests {
    // SmolLM2's shape: 30 layers, 3 KV heads of 64; 8192 positions are 2 × 94 MB of f16.
    static let layers = 30
    static let kvDim = 192
    static let capacity = 8192

    @Test func aNewCacheTakesNoMemory() throws {
        let cache = KVCache(layers: Self.layers, kvDim: Self.kvDim, capacity: Self.capacity)
        let resident = try #require(cache.residentBytes())
        #expect(resident == 0, "a fresh cache of \(Self.capacity) positions has \(resident) bytes resident")
    }

    @Test func onlyWrittenPositionsTakeMemory() throws {
        let cache = KVCache(layers: Self.layers, kvDim: Self.kvDim, capacity: Self.capacity)
        let positions = 100
        for layer in 0..<Self.layers {
            let k = cache.keys(layer: layer)
            let v = cache.values(layer: layer)
            for i in 0..<(positions * Self.kvDim) {
                k[i] = 0x3C00
                v[i] = 0x3C00
            }
        }
        let resident = try #require(cache.residentBytes())
        let written = 2 * Self.layers * positions * Self.kvDim * 2
        // Each layer's rows start mid-page at worst: at most two extra pages per layer and half.
        let slack = 2 * Self.layers * 2 * 4096
        #expect(resident >= written, "resident \(resident) bytes, \(written) written")
        #expect(resident <= written + slack, "resident \(resident) bytes, \(written) written")
        let full = 2 * Self.layers * Self.capacity * Self.kvDim * 2
        #expect(resident * 20 < full)
    }

    @Test func aFreshCacheReadsZero() {
        let cache = KVCache(layers: 2, kvDim: 8, capacity: 16)
        let k = cache.keys(layer: 1)
        let v = cache.values(layer: 1)
        #expect((0..<(16 * 8)).allSatisfy { k[$0] == 0 && v[$0] == 0 })
    }
}
