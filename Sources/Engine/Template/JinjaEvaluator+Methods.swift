/// Methods templates call on strings and dicts, as Python has them.
extension JinjaEvaluator {
    static let stringMethods: Set<String> = [
        "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "upper", "lower", "replace", "title",
        "capitalize", "find", "count", "format",
    ]
    static let dictMethods: Set<String> = ["get", "items", "keys", "values"]

    func callMethod(_ name: String, on receiver: JinjaValue, _ arguments: [JinjaValue], _ named: [String: JinjaValue])
        throws(JinjaError) -> JinjaValue
    {
        switch receiver {
        case .string(let text): return try stringMethod(name, text, arguments)
        case .dict(let pairs):
            switch name {
            case "get":
                guard case .string(let key)? = arguments.first else { throw .evaluation("get needs a string key") }
                return pairs.first { $0.key == key.text }?.value ?? (arguments.count > 1 ? arguments[1] : .none)
            case "items": return .list(pairs.map { .list([.string($0.key, origin: .data), $0.value]) })
            case "keys": return .list(pairs.map { .string($0.key, origin: .data) })
            case "values": return .list(pairs.map(\.value))
            default: break
            }
        default: break
        }
        throw .evaluation("a \(receiver.typeName) has no method '\(name)'")
    }

    private func stringArgument(_ arguments: [JinjaValue], _ index: Int, _ method: String) throws(JinjaError)
        -> String?
    {
        guard index < arguments.count else { return nil }
        switch arguments[index] {
        case .string(let text): return text.text
        case .none: return nil
        default: throw .evaluation("\(method) needs string arguments")
        }
    }

    private func stringMethod(_ name: String, _ text: JinjaString, _ arguments: [JinjaValue]) throws(JinjaError)
        -> JinjaValue
    {
        switch name {
        case "strip", "lstrip", "rstrip":
            let set = try stringArgument(arguments, 0, name).map { Set($0.unicodeScalars) }
            return .string(text.stripped(leading: name != "rstrip", trailing: name != "lstrip", characters: set))
        case "startswith", "endswith":
            var prefixes: [String] = []
            if case .list(let items)? = arguments.first {
                for item in items { if case .string(let option) = item { prefixes.append(option.text) } }
            } else if let prefix = try stringArgument(arguments, 0, name) {
                prefixes = [prefix]
            }
            let scalars = Array(text.text.unicodeScalars)
            return .bool(
                prefixes.contains { option in
                    let needle = Array(option.unicodeScalars)
                    guard needle.count <= scalars.count else { return false }
                    return name == "startswith"
                        ? Array(scalars.prefix(needle.count)) == needle : Array(scalars.suffix(needle.count)) == needle
                })
        case "split":
            let separator = try stringArgument(arguments, 0, name)
            if separator == "" { throw .evaluation("split: empty separator") }
            let limit = arguments.count > 1 ? (arguments[1].integer ?? -1) : -1
            return .list(text.split(separator, maxSplits: limit).map { .string($0) })
        case "upper": return .string(text.mapSegments { $0.uppercased() })
        case "lower": return .string(text.mapSegments { $0.lowercased() })
        case "capitalize", "title":
            var result = JinjaString()
            var atWordStart = true
            for pair in text.scalarsWithOrigins {
                let letter = pair.scalar.properties.isAlphabetic
                let piece = String(pair.scalar)
                let changed = atWordStart && letter ? piece.uppercased() : piece.lowercased()
                result.append(changed, origin: pair.origin)
                atWordStart = name == "title" ? !letter : false
            }
            return .string(result)
        case "replace":
            guard let old = try stringArgument(arguments, 0, name), arguments.count > 1,
                case .string(let new) = arguments[1]
            else { throw .evaluation("replace needs two strings") }
            let limit = arguments.count > 2 ? (arguments[2].integer ?? -1) : -1
            if old.isEmpty { return .string(text) }
            let occurrences = JinjaString.occurrences(
                of: Array(old.unicodeScalars), in: Array(text.text.unicodeScalars)
            ).count
            let grown = text.utf8Count + occurrences * max(0, new.utf8Count - old.utf8.count)
            if grown > limits.maxValueSize { throw .limitExceeded(.valueSize, limit: limits.maxValueSize) }
            return .string(text.replacing(old, with: new, count: limit))
        case "find", "count":
            guard let needle = try stringArgument(arguments, 0, name) else {
                throw .evaluation("\(name) needs a string")
            }
            let found = JinjaString.occurrences(of: Array(needle.unicodeScalars), in: Array(text.text.unicodeScalars))
            return .int(name == "count" ? found.count : (found.first ?? -1))
        default:
            throw .evaluation("strings have no method '\(name)' here")
        }
    }
}
