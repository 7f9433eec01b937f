/// Finds a token by the exact bytes of its vocabulary spelling, without building a `String`.
///
/// An open-addressing hash table over the token spellings (FNV-1a, linear probing). Spellings
/// are compared byte for byte, as llama.cpp's `token_to_id` map does; Swift `String` equality
/// would treat canonically equivalent spellings (`é` and `e` + U+0301) as one. When a spelling
/// repeats, the last id wins, as in llama.cpp, whose loader overwrites earlier entries.
struct TokenLookup: Sendable {
    private let storage: [UInt8]
    private let starts: [Int]
    private let slots: [Int32]
    private let mask: Int

    init(spellings: [String]) {
        var storage: [UInt8] = []
        storage.reserveCapacity(spellings.reduce(0) { $0 + $1.utf8.count })
        var starts: [Int] = [0]
        starts.reserveCapacity(spellings.count + 1)
        for spelling in spellings {
            storage.append(contentsOf: spelling.utf8)
            starts.append(storage.count)
        }
        var capacity = 16
        while capacity < spellings.count * 2 { capacity *= 2 }
        var slots = [Int32](repeating: -1, count: capacity)
        let mask = capacity - 1
        storage.withUnsafeBufferPointer { bytes in
            for id in spellings.indices {
                let key = UnsafeBufferPointer(rebasing: bytes[starts[id]..<starts[id + 1]])
                var slot = Int(truncatingIfNeeded: Self.hash(key)) & mask
                while slots[slot] >= 0 {
                    let other = Int(slots[slot])
                    if bytes[starts[other]..<starts[other + 1]].elementsEqual(key) { break }
                    slot = (slot + 1) & mask
                }
                slots[slot] = Int32(id)
            }
        }
        self.storage = storage
        self.starts = starts
        self.slots = slots
        self.mask = mask
    }

    /// The id of the token spelled exactly `key`, if any.
    func id(_ key: UnsafeBufferPointer<UInt8>) -> Int32? {
        var slot = Int(truncatingIfNeeded: Self.hash(key)) & mask
        return storage.withUnsafeBufferPointer { bytes in
            while true {
                let id = slots[slot]
                if id < 0 { return nil }
                let start = starts[Int(id)]
                let end = starts[Int(id) + 1]
                if end - start == key.count && memoryEqual(bytes, start, key) { return id }
                slot = (slot + 1) & mask
            }
        }
    }

    func id(_ key: [UInt8]) -> Int32? {
        key.withUnsafeBufferPointer { id($0) }
    }

    func id(_ key: String) -> Int32? {
        var key = key
        return key.withUTF8 { id($0) }
    }

    @inline(__always) private func memoryEqual(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ key: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        for index in 0..<key.count where bytes[start + index] != key[index] {
            return false
        }
        return true
    }

    @inline(__always) private static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
