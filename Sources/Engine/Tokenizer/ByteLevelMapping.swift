/// GPT-2's reversible mapping between raw bytes and printable Unicode scalars.
///
/// Byte-level BPE vocabularies store every token as text in which each original byte is one
/// printable scalar: bytes that are already visible (`!`...`~`, `¡`...`¬`, `®`...`ÿ`) stand for
/// themselves and the other 68 bytes are moved, in order, to U+0100 and up (so a space is `Ġ`).
enum ByteLevelMapping {
    /// The scalar value that stands for each byte.
    static let scalarForByte: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            if isSelfMapped(byte) {
                table[byte] = UInt32(byte)
            } else {
                table[byte] = next
                next += 1
            }
        }
        return table
    }()

    /// The one-scalar string that stands for each byte, as it appears in vocabulary entries.
    static let stringForByte: [String] = scalarForByte.map { String(Unicode.Scalar($0)!) }

    /// The UTF-8 of `stringForByte`, for building vocabulary spellings from raw bytes.
    static let utf8ForByte: [[UInt8]] = stringForByte.map { Array($0.utf8) }

    /// Decodes vocabulary text back to the bytes it stands for. Scalars outside the mapping
    /// (never produced by a byte-level vocabulary) are kept as their own UTF-8 bytes.
    static func bytes(fromVocabularyText text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if let byte = byte(forScalar: scalar.value) {
                out.append(byte)
            } else {
                out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        return out
    }

    static func byte(forScalar value: UInt32) -> UInt8? {
        if value < 256 {
            return isSelfMapped(Int(value)) ? UInt8(value) : nil
        }
        if value < 256 + 68 {
            return movedBytes[Int(value - 256)]
        }
        return nil
    }

    /// The bytes moved above U+00FF, in the order they were moved.
    private static let movedBytes: [UInt8] = (0..<256).filter { !isSelfMapped($0) }.map { UInt8($0) }

    private static func isSelfMapped(_ byte: Int) -> Bool {
        (33...126).contains(byte) || (161...172).contains(byte) || (174...255).contains(byte)
    }
}
