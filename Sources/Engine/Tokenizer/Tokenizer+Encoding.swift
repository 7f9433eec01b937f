extension Tokenizer {
    /// A part of the text being encoded: raw bytes still to encode, or a token already decided.
    enum Segment {
        case raw(Range<Int>)
        case token(Int32)
    }

    /// Cuts special tokens out of the raw segments of `bytes` and encodes the rest with the
    /// model. Control and unknown spellings match only inside `specialRanges`; user-defined
    /// spellings match anywhere.
    func encodeJoined(_ bytes: [UInt8], segments initial: [Segment], specialRanges: [Range<Int>]) -> [Int32] {
        var output: [Int32] = []
        var scratch = EncodingScratch()
        bytes.withUnsafeBufferPointer { buffer in
            var segments = initial
            // Vocabularies hold thousands of special spellings (Gemma: 6,414); a spelling with a
            // byte pair that the text lacks cannot occur, so most are skipped without a scan.
            let pairs = BytePairSet(buffer)
            for special in table.specialTokens
            where (special.alwaysMatched || !specialRanges.isEmpty) && pairs.mayContain(special.bytes) {
                segments = partition(
                    segments, bytes: buffer, by: special.bytes, id: special.id,
                    allowedIn: special.alwaysMatched ? nil : specialRanges,
                    stripsRight: rightStrippedIDs.contains(special.id))
            }
            // llama.cpp's SPM prefix rule: a stretch at the start or after a special token.
            var followsSpecial = true
            for segment in segments {
                switch segment {
                case .token(let id):
                    output.append(id)
                    followsSpecial = true
                case .raw(let range):
                    model.encode(
                        UnsafeBufferPointer(rebasing: buffer[range]), followsSpecial: followsSpecial,
                        scratch: &scratch, into: &output)
                    followsSpecial = false
                }
            }
        }
        return output
    }

    /// Cuts every occurrence of `needle` (left to right, not overlapping) out of the raw
    /// segments; with `allowedIn`, only occurrences lying wholly inside one of those ranges. With
    /// `stripsRight`, the ASCII whitespace after each occurrence is dropped too (llama.cpp's
    /// `rstrip` attribute, `isspace` in the C locale).
    private func partition(
        _ segments: [Segment], bytes: UnsafeBufferPointer<UInt8>, by needle: [UInt8], id: Int32,
        allowedIn allowed: [Range<Int>]?, stripsRight: Bool = false
    ) -> [Segment] {
        var result: [Segment] = []
        result.reserveCapacity(segments.count)
        let first = needle[0]
        let length = needle.count
        for segment in segments {
            guard case .raw(let range) = segment, range.count >= length else {
                result.append(segment)
                continue
            }
            var start = range.lowerBound
            var index = range.lowerBound
            while index + length <= range.upperBound {
                if bytes[index] == first && matches(bytes, at: index, needle)
                    && (allowed.map { Self.contains($0, index..<(index + length)) } ?? true)
                {
                    if index > start { result.append(.raw(start..<index)) }
                    result.append(.token(id))
                    index += length
                    while stripsRight && index < range.upperBound && Self.isSpace(bytes[index]) { index += 1 }
                    start = index
                } else {
                    index += 1
                }
            }
            if start < range.upperBound { result.append(.raw(start..<range.upperBound)) }
        }
        return result
    }

    /// C's `isspace` in the "C" locale: space, \t, \n, \v, \f, \r.
    @inline(__always) private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func contains(_ ranges: [Range<Int>], _ match: Range<Int>) -> Bool {
        ranges.contains { $0.lowerBound <= match.lowerBound && match.upperBound <= $0.upperBound }
    }

    @inline(__always) private func matches(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int, _ needle: [UInt8])
        -> Bool
    {
        for offset in 1..<needle.count where bytes[index + offset] != needle[offset] {
            return false
        }
        return true
    }
}
