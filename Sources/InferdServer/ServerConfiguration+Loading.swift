import Foundation

extension ServerConfiguration {
    /// Builds the configuration from built-in defaults, then the file, then the environment,
    /// then flags. `arguments` are the flags after the subcommand. The file is `--config PATH`
    /// (or `INFERD_CONFIG`), else `config/inferd.json` when it exists.
    public static func load(
        arguments: [String], environment: [String: String], defaultFile: String = "config/inferd.json"
    ) throws(ConfigurationError) -> ServerConfiguration {
        var config = ServerConfiguration()
        let flags = try parseFlags(arguments)
        let explicitFile = flags["config"] ?? environment["INFERD_CONFIG"]
        if let path = explicitFile {
            try config.applyFile(path)
        } else if FileManager.default.fileExists(atPath: defaultFile) {
            try config.applyFile(defaultFile)
        }
        for setting in settings {
            if let raw = environment[setting.environment] {
                try config.apply(setting, raw: raw, source: "environment variable \(setting.environment)")
            }
        }
        for (name, raw) in flags where name != "config" {
            guard let setting = settings.first(where: { $0.flag == "--" + name }) else {
                throw ConfigurationError("unknown flag --\(name)")
            }
            try config.apply(setting, raw: raw, source: "flag \(setting.flag)")
        }
        return config
    }

    /// `--name value` and `--name=value` pairs.
    static func parseFlags(_ arguments: [String]) throws(ConfigurationError) -> [String: String] {
        var flags: [String: String] = [:]
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            guard arg.hasPrefix("--"), arg.count > 2 else {
                throw ConfigurationError("unexpected argument \(arg): settings are given as --name value")
            }
            let body = String(arg.dropFirst(2))
            if let eq = body.firstIndex(of: "=") {
                flags[String(body[..<eq])] = String(body[body.index(after: eq)...])
            } else {
                guard i + 1 < arguments.count else { throw ConfigurationError("flag \(arg) needs a value") }
                flags[body] = arguments[i + 1]
                i += 1
            }
            i += 1
        }
        return flags
    }

    /// Applies a JSON config file. Keys starting with "//" are comments.
    mutating func applyFile(_ path: String) throws(ConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read config file \(path)")
        }
        let dict: [String: FileValue]
        do {
            dict = try JSONDecoder().decode([String: FileValue].self, from: data)
        } catch DecodingError.typeMismatch(_, _) {
            throw ConfigurationError("config file \(path) must hold a JSON object of strings and numbers")
        } catch {
            throw ConfigurationError("config file \(path) is not valid JSON: \(error)")
        }
        for key in dict.keys.sorted() where !key.hasPrefix("//") {
            guard let setting = Self.settings.first(where: { $0.key == key }) else {
                throw ConfigurationError("unknown key \"\(key)\" in config file \(path)")
            }
            let source = "key \"\(key)\" in config file \(path)"
            switch (setting.kind, dict[key]!) {
            case (.string, .string(let s)), (.optionalString, .string(let s)), (.choice, .string(let s)):
                try apply(setting, raw: s, source: source)
            case (.int, .number(let n)), (.double, .number(let n)):
                try apply(setting, raw: n, source: source)
            case (.bool, .bool(let b)):
                try apply(setting, raw: b ? "true" : "false", source: source)
            default:
                throw ConfigurationError("\(source) has the wrong type: expected \(setting.kind.name)")
            }
        }
    }

    /// A config file value as written: the JSON type matters (a port written as "8080" is refused).
    enum FileValue: Decodable {
        case string(String)
        case number(String)
        case bool(Bool)
        case other

        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else if let i = try? c.decode(Int.self) {
                self = .number(String(i))
            } else if let d = try? c.decode(Double.self) {
                self = .number(String(d))
            } else {
                self = .other
            }
        }
    }

    mutating func apply(_ setting: Setting, raw: String, source: String) throws(ConfigurationError) {
        let value: Value
        switch setting.kind {
        case .string:
            guard !raw.isEmpty else { throw ConfigurationError("\(source) must not be empty") }
            value = .string(raw)
        case .optionalString:
            value = .string(raw)
        case .choice(let options):
            guard options.contains(raw) else {
                throw ConfigurationError("\(source) is \"\(raw)\", expected one of \(options.joined(separator: ", "))")
            }
            value = .string(raw)
        case .int:
            guard let i = Int(raw.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigurationError("\(source) is \"\(raw)\", expected an integer")
            }
            if let min = setting.minimum, Double(i) < min {
                throw ConfigurationError("\(source) is \(i), must be at least \(Int(min))")
            }
            value = .int(i)
        case .double:
            guard let d = Double(raw.trimmingCharacters(in: .whitespaces)), d.isFinite else {
                throw ConfigurationError("\(source) is \"\(raw)\", expected a number")
            }
            if let min = setting.minimum, d < min {
                throw ConfigurationError("\(source) is \(d), must be at least \(min)")
            }
            value = .double(d)
        case .bool:
            switch raw.trimmingCharacters(in: .whitespaces) {
            case "true": value = .bool(true)
            case "false": value = .bool(false)
            default: throw ConfigurationError("\(source) is \"\(raw)\", expected true or false")
            }
        }
        setting.apply(&self, value)
    }

    /// The effective settings as key=value pairs, for the start-up log line.
    public var summary: [(String, String)] {
        Self.settings.map { s in
            let value = s.read(self).description
            return (s.key, s.secret && !value.isEmpty ? "(set)" : value)
        }
    }

    /// Help text listing every setting with its three spellings and default.
    public static var helpText: String {
        let defaults = ServerConfiguration()
        return settings.map { s in
            "  \(s.flag) (\(s.environment), key \(s.key)): \(s.help) Default: \(s.read(defaults))."
        }.joined(separator: "\n")
    }
}

extension ServerConfiguration.Setting.Kind {
    var name: String {
        switch self {
        case .string, .optionalString: "a string"
        case .int: "an integer"
        case .double: "a number"
        case .bool: "true or false"
        case .choice(let options): "one of \(options.joined(separator: ", "))"
        }
    }
}
