import Foundation

/// The JSON writer for upstream request bodies: keys sorted by their UTF-8 bytes, so the same
/// request is the same body, and a value's own JSON text placed as written (`Raw`).
///
/// Why not `JSONSerialization`: on Linux it bridges every value through Foundation's object
/// types and took 130–140 µs for a one-message chat body on this machine, on every proxied
/// request's way to the upstream (the proxy's added time to first token); this takes a few µs.
/// `Raw` replaces splicing a schema's text into the encoded body after a marker: a schema keeps
/// its key order (engines generate properties in schema order) without a second pass.
enum UpstreamJSON {
    /// JSON text written as it is (a schema, already valid JSON).
    struct Raw {
        let text: String
    }

    struct Unencodable: Error, CustomStringConvertible {
        let description: String
    }

    /// Encodes `String`, `Bool`, integers, finite `Double`/`Float`, `NSNull`, `Raw`, and arrays
    /// and string-keyed dictionaries of them; anything else is an error, never skipped.
    static func encode(_ value: Any) throws(Unencodable) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        try write(value, to: &out)
        return Data(out)
    }

    private static func write(_ value: Any, to out: inout [UInt8]) throws(Unencodable) {
        // Exact types first: on some platforms a number held as `Any` also casts to `Bool`.
        switch value {
        case let s as String: string(s, to: &out)
        case let raw as Raw: out += raw.text.utf8
        case let b as Bool where type(of: value) == Bool.self: out += (b ? "true" : "false").utf8
        case let i as Int: out += String(i).utf8
        case let i as Int32: out += String(i).utf8
        case let i as Int64: out += String(i).utf8
        case let u as UInt64: out += String(u).utf8
        case let d as Double: try number(d, to: &out)
        case let f as Float: try number(Double(f), to: &out)
        case is NSNull: out += "null".utf8
        case let list as [Any]:
            out.append(UInt8(ascii: "["))
            for (i, element) in list.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            // Keys sorted by their UTF-8 bytes, so the body (and a single-flight key made of it)
            // is the same for the same request.
            for (i, key) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(key, to: &out)
                out.append(UInt8(ascii: ":"))
                try write(object[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        default:
            throw Unencodable(description: "a value of type \(type(of: value)) has no JSON form")
        }
    }

    private static func number(_ d: Double, to out: inout [UInt8]) throws(Unencodable) {
        guard d.isFinite else { throw Unencodable(description: "\(d) is not a JSON number") }
        // Whole numbers without a fraction (as JSONSerialization writes them); others in Swift's
        // shortest form that reads back to the same Double.
        if d == d.rounded(), abs(d) < 1e15 {
            out += String(Int64(d)).utf8
        } else {
            out += "\(d)".utf8
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func string(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += #"\""#.utf8
            case UInt8(ascii: "\\"): out += #"\\"#.utf8
            case 0x0A: out += #"\n"#.utf8
            case 0x0D: out += #"\r"#.utf8
            case 0x09: out += #"\t"#.utf8
            case 0x08: out += #"\b"#.utf8
            case 0x0C: out += #"\f"#.utf8
            case 0..<0x20:
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
