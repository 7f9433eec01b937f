/// Many short byte strings in one buffer (one allocation instead of one per token), addressed
/// by index. Used for the decoded piece of every token.
struct ByteStore: Sendable {
    private(set) var bytes: [UInt8] = []
    private(set) var starts: [Int] = [0]

    var count: Int { starts.count - 1 }

    mutating func reserve(strings: Int, bytes total: Int) {
        starts.reserveCapacity(strings + 1)
        bytes.reserveCapacity(total)
    }

    mutating func append<Bytes: Sequence>(_ string: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: string)
        starts.append(bytes.count)
    }

    /// Adds bytes to the string being built; `closeString()` ends it.
    mutating func appendPartial(_ byte: UInt8) {
        bytes.append(byte)
    }

    mutating func closeString() {
        starts.append(bytes.count)
    }

    subscript(index: Int) -> ArraySlice<UInt8> {
        bytes[starts[index]..<starts[index + 1]]
    }
}
