import Telemetry

/// Server-Sent Events wire format.
package enum SSEFormat {
    /// `event: NAME\nid: N\ndata: LINE\n…\n\n`; a data value with newlines becomes several `data:` lines.
    package static func encode(event: String, id: Int, data: String) -> [UInt8] {
        encodeData(data, prefix: "event: \(singleLine(event))\nid: \(id)\n")
    }

    /// `data: LINE\n…\n\n` alone: no `event:` or `id:` field, as OpenAI-style streams expect.
    static func encode(data: String) -> [UInt8] {
        encodeData(data, prefix: "")
    }

    private static func encodeData(_ data: String, prefix: String) -> [UInt8] {
        var out = prefix
        var line = ""
        var sawCR = false
        for scalar in data.unicodeScalars {
            switch scalar {
            case "\r":
                out += "data: \(line)\n"
                line = ""
                sawCR = true
                continue
            case "\n":
                if !sawCR {
                    out += "data: \(line)\n"
                    line = ""
                }
            default:
                line.unicodeScalars.append(scalar)
            }
            sawCR = false
        }
        out += "data: \(line)\n\n"
        return Array(out.utf8)
    }

    static let heartbeat: [UInt8] = Array(": ping\n\n".utf8)

    /// Event names cannot contain line breaks; they would end the field.
    static func singleLine(_ s: String) -> String {
        String(s.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }.map(Character.init))
    }
}
