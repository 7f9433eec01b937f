/// Control characters (C0, DEL and C1: U+0000–U+001F, U+007F–U+009F), which no id, request id or
/// URL parameter of this server ever holds. Finding one is a client's error, answered 400 naming
/// where it was; reading past it (or, in C strings, stopping at a NUL) would resolve a different
/// id than the client sent. An escaped NUL in a URL arrives as DEL (see the C shim's unescape).
public enum ControlCharacters {
    /// The first control character in `text`, or nil.
    public static func first(in text: some StringProtocol) -> Unicode.Scalar? {
        text.unicodeScalars.first { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// "U+0000": how a message names one.
    public static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
