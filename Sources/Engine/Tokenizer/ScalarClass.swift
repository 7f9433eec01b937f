/// The character classes the byte-level BPE pre-tokenizer regexes distinguish.
///
/// They follow the regex classes llama.cpp uses: `\p{L}` (letters, general categories L*),
/// `\p{N}` (numbers, N*), `\s` (the Unicode White_Space property) and everything else that is an
/// assigned code point. Unassigned code points belong to no class and never join a run.
enum ScalarClass: UInt8 {
    case letter
    case number
    case whitespace
    case other
    /// Unassigned code points, and positions past the end of the fragment being split.
    case none

    static func of(_ value: UInt32) -> ScalarClass {
        if value < 128 { return asciiTable[Int(value)] }
        guard let scalar = Unicode.Scalar(value) else { return .none }
        return classify(scalar)
    }

    private static let asciiTable: [ScalarClass] = (0..<128).map { classify(Unicode.Scalar(UInt8($0))) }

    private static func classify(_ scalar: Unicode.Scalar) -> ScalarClass {
        let properties = scalar.properties
        if properties.isWhitespace { return .whitespace }
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            return .letter
        case .decimalNumber, .letterNumber, .otherNumber:
            return .number
        case .unassigned:
            return .none
        default:
            return .other
        }
    }
}
