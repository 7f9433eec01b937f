import Foundation

/// The one JSON encoding of everything inferd sends or stores: every response body, every SSE
/// payload, stored session options. Keys are sorted and slashes left alone, so two identical
/// answers are byte-identical (apart from ids and times) whichever route or event carries them.
public enum WireJSON {
    /// A fresh encoder per call: `JSONEncoder` is a mutable class, and the formatting is all that
    /// has to be shared.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func bytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder().encode(value))
    }

    /// The value as a JSON string; `{}` if it cannot be encoded (no inferd type fails to).
    public static func string<T: Encodable>(_ value: T) -> String {
        guard let data = try? encoder().encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
