/// The character classes the byte-level BPE pre-tokenizer regexes distinguish.
///
/// They follow the regex classes llama.cpp uses: `\p{L}` (letters, general categories L*),
/// `\p{N}` (numbers, N*), `\s` (the Unicode White_Space property) and every other code point,
/// unassigned ones included: llama.cpp flags those UNDEFINED, which is not zero, so its matchers
/// treat them as `[^\s\p{L}\p{N}]`.
enum ScalarClass: UInt8 {
    case letter
    case number
    case whitespace
    case other
    /// Positions past the end of the fragment being split (and values that are no scalar).
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
        default:
            return .other
        }
    }
}
