import Foundation

/// A structured logger: fixed messages with `key=value` metadata, one line per event.
///
/// Messages are constant strings ("stream cancelled"), never interpolated; everything that
/// varies goes in metadata so lines stay greppable and machine-readable.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug = 0, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    public var label: String
    public var minimumLevel: Level
    public var format: Format
    /// Metadata added to every line this logger writes (e.g. `request_id`).
    public var baseMetadata: [(String, String)]
    private let sink: LogSink

    public init(
        label: String, minimumLevel: Level = .info, format: Format = .text, sink: LogSink = .standardError
    ) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.format = format
        self.baseMetadata = []
        self.sink = sink
    }

    /// A copy that adds `metadata` to every line.
    public func with(_ metadata: KeyValuePairs<String, String>) -> Logger {
        var copy = self
        copy.baseMetadata.append(contentsOf: metadata.map { ($0.key, $0.value) })
        return copy
    }

    public func debug(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.debug, message, metadata)
    }
    public func info(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.info, message, metadata)
    }
    public func warning(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.warning, message, metadata)
    }
    public func error(_ message: StaticString, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.error, message, metadata)
    }

    public func log(_ level: Level, _ message: StaticString, _ metadata: KeyValuePairs<String, String>) {
        log(level, message, fields: metadata.map { ($0.key, $0.value) })
    }

    /// For metadata assembled at run time (e.g. values added by outer layers).
    public func log(_ level: Level, _ message: StaticString, fields metadata: [(String, String)]) {
        guard level >= minimumLevel else { return }
        var fields = baseMetadata
        fields.append(contentsOf: metadata)
        let line = Self.render(
            level: level, label: label, message: "\(message)", fields: fields, format: format, date: Date())
        sink.write(line)
    }

    static func render(
        level: Level, label: String, message: String, fields: [(String, String)], format: Format, date: Date
    ) -> String {
        let time = date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        switch format {
        case .text:
            var line = "\(time) \(level.name) [\(label)] \(message)"
            for (key, value) in fields {
                line += " \(key)=\(quoteIfNeeded(value))"
            }
            return line + "\n"
        case .json:
            var line = "{\"time\":\(jsonString(time)),\"level\":\"\(level.name)\",\"label\":\(jsonString(label))"
            line += ",\"message\":\(jsonString(message))"
            for (key, value) in fields {
                line += ",\(jsonString(key)):\(jsonString(value))"
            }
            return line + "}\n"
        }
    }

    static func quoteIfNeeded(_ value: String) -> String {
        if !value.isEmpty && !value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) {
            return value
        }
        return jsonString(value)
    }

    /// `s` as a JSON string literal (also the remote backend's, for the call markup it writes).
    package static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Where log lines go. Writes are a single `write(2)` per line so lines from
/// different threads never interleave.
public struct LogSink: Sendable {
    let writeLine: @Sendable (String) -> Void

    public init(_ writeLine: @escaping @Sendable (String) -> Void) {
        self.writeLine = writeLine
    }

    public static let standardError = LogSink { line in
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
    }

    func write(_ line: String) { writeLine(line) }
}
