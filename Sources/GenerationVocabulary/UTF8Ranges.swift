/// Turns ranges of Unicode scalars into the UTF-8 byte sequences that spell exactly them, so a
/// byte-level matcher can match characters: each result is a sequence of byte ranges, one per
/// byte, and the alternatives never overlap. Surrogates (not scalars) are never included.
public enum UTF8Ranges {
    static let maxScalar: UInt32 = 0x10FFFF

    /// The scalars not in `ranges` (surrogates left out either way).
    package static func complement(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in normalized(ranges) {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = r.upperBound &+ 1
            if r.upperBound >= maxScalar { return out }
        }
        if next <= maxScalar { out.append(next...maxScalar) }
        return out
    }

    /// Sorted, merged, clipped to the scalar range.
    package static func normalized(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        let sorted = ranges.filter { $0.lowerBound <= maxScalar }
            .map { $0.lowerBound...min($0.upperBound, maxScalar) }
            .sorted { $0.lowerBound < $1.lowerBound }
        var out: [ClosedRange<UInt32>] = []
        for r in sorted {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }

    /// The byte sequences for the scalars in `ranges`.
    package static func sequences(_ ranges: [ClosedRange<UInt32>]) -> [[ClosedRange<UInt8>]] {
        var out: [[ClosedRange<UInt8>]] = []
        for r in normalized(ranges) {
            // Surrogates are not scalars: cut them out.
            if r.lowerBound < 0xD800 {
                split(r.lowerBound, min(r.upperBound, 0xD7FF), into: &out)
            }
            if r.upperBound > 0xDFFF {
                split(max(r.lowerBound, 0xE000), r.upperBound, into: &out)
            }
        }
        return out
    }

    /// Splits at the encoding-length boundaries, then at continuation-byte boundaries, until
    /// every piece's bytes vary independently (each byte position a plain range).
    private static func split(_ lo: UInt32, _ hi: UInt32, into out: inout [[ClosedRange<UInt8>]]) {
        guard lo <= hi else { return }
        for boundary: UInt32 in [0x7F, 0x7FF, 0xFFFF] where lo <= boundary && hi > boundary {
            split(lo, boundary, into: &out)
            split(boundary + 1, hi, into: &out)
            return
        }
        let n = length(lo)
        if n > 1 {
            for i in 1..<n {
                let m: UInt32 = (1 << (6 * UInt32(i))) - 1
                if lo & ~m != hi & ~m {
                    if lo & m != 0 {
                        split(lo, lo | m, into: &out)
                        split((lo | m) + 1, hi, into: &out)
                        return
                    }
                    if hi & m != m {
                        split(lo, (hi & ~m) - 1, into: &out)
                        split(hi & ~m, hi, into: &out)
                        return
                    }
                }
            }
        }
        let a = encode(lo)
        let b = encode(hi)
        out.append(zip(a, b).map { $0...$1 })
    }

    static func length(_ scalar: UInt32) -> Int {
        scalar < 0x80 ? 1 : scalar < 0x800 ? 2 : scalar < 0x10000 ? 3 : 4
    }

    static func encode(_ scalar: UInt32) -> [UInt8] {
        switch length(scalar) {
        case 1: return [UInt8(scalar)]
        case 2: return [UInt8(0xC0 | (scalar >> 6)), UInt8(0x80 | (scalar & 0x3F))]
        case 3:
            return [
                UInt8(0xE0 | (scalar >> 12)), UInt8(0x80 | ((scalar >> 6) & 0x3F)), UInt8(0x80 | (scalar & 0x3F)),
            ]
        default:
            return [
                UInt8(0xF0 | (scalar >> 18)), UInt8(0x80 | ((scalar >> 12) & 0x3F)),
                UInt8(0x80 | ((scalar >> 6) & 0x3F)), UInt8(0x80 | (scalar & 0x3F)),
            ]
        }
    }
}

extension UTF8Ranges {
    /// The scalars of `ranges` that are not in `removed`.
    public static func subtracting(_ ranges: [ClosedRange<UInt32>], _ removed: [ClosedRange<UInt32>])
        -> [ClosedRange<UInt32>]
    {
        let keep = complement(removed)
        var out: [ClosedRange<UInt32>] = []
        for r in normalized(ranges) {
            for k in keep where k.lowerBound <= r.upperBound && r.lowerBound <= k.upperBound {
                out.append(max(r.lowerBound, k.lowerBound)...min(r.upperBound, k.upperBound))
            }
        }
        return out
    }
}

extension UTF8Ranges {
    /// The UTF-8 bytes of a scalar value (surrogate values encoded as they are, as GBNF's `\x`
    /// escapes of bytes need: a value below 0x100 from `\x` is one character, not a byte).
    public static func encodeScalar(_ value: UInt32) -> [UInt8] { encode(value) }
}
