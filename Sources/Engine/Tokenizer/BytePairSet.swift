/// The set of adjacent byte pairs (and single bytes) in a text: a quick test that rules out
/// most special-token spellings before `Tokenizer` scans the text for them.
struct BytePairSet {
    private var pairBits = [UInt64](repeating: 0, count: 65_536 / 64)
    private var byteBits = [UInt64](repeating: 0, count: 4)

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        for index in bytes.indices {
            let byte = Int(bytes[index])
            byteBits[byte >> 6] |= 1 << UInt64(byte & 63)
            if index + 1 < bytes.count {
                let pair = byte << 8 | Int(bytes[index + 1])
                pairBits[pair >> 6] |= 1 << UInt64(pair & 63)
            }
        }
    }

    /// False when `needle` certainly does not occur in the text.
    func mayContain(_ needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return false }
        if needle.count == 1 {
            return byteBits[Int(first) >> 6] & (1 << UInt64(first & 63)) != 0
        }
        for index in 0..<(needle.count - 1) {
            let pair = Int(needle[index]) << 8 | Int(needle[index + 1])
            if pairBits[pair >> 6] & (1 << UInt64(pair & 63)) == 0 { return false }
        }
        return true
    }
}
