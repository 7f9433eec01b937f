import Foundation

/// The filters chat templates use (`value | name(arguments)`).
extension JinjaEvaluator {
    func applyFilter(_ name: String, to value: JinjaValue, _ arguments: [JinjaValue], _ named: [String: JinjaValue])
        throws(JinjaError) -> JinjaValue
    {
        func argument(_ index: Int, _ key: String) -> JinjaValue? {
            index < arguments.count ? arguments[index] : named[key]
        }
        switch name {
        case "trim":
            return .string(try text(value, for: name).stripped(leading: true, trailing: true))
        case "upper", "lower", "capitalize", "title":
            return try callMethod(name, on: .string(try text(value, for: name)), [], [:])
        case "replace":
            return try callMethod("replace", on: .string(try text(value, for: name)), arguments, named)
        case "length", "count":
            switch value {
            case .string(let text): return .int(text.text.unicodeScalars.count)
            case .list(let items): return .int(items.count)
            case .dict(let pairs): return .int(pairs.count)
            case .undefined: return .int(0)
            default: throw .evaluation("a \(value.typeName) has no length")
            }
        case "string":
            return .string(value.rendered())
        case "safe", "e", "escape":
            if name == "safe" { return value }
            return .string(
                value.rendered().mapSegments {
                    $0.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&#34;")
                        .replacingOccurrences(of: "'", with: "&#39;")
                })
        case "default", "d":
            let fallback = argument(0, "default_value") ?? .string("", origin: .template)
            let onFalse = argument(1, "boolean")?.isTruthy ?? false
            return value.isUndefined || (onFalse && !value.isTruthy) ? fallback : value
        case "first", "last":
            let items = try iterate(value)
            return (name == "first" ? items.first : items.last) ?? .undefined(name)
        case "list":
            return .list(try iterate(value))
        case "reverse":
            if case .string(let text) = value {
                return .string(JinjaString.from(text.scalarsWithOrigins.reversed()[...]))
            }
            return .list(try iterate(value).reversed())
        case "items":
            guard case .dict(let pairs) = value else {
                if value.isUndefined { return .list([]) }
                throw .evaluation("items needs a dict, got a \(value.typeName)")
            }
            return .list(pairs.map { .list([.string($0.key, origin: .data), $0.value]) })
        case "join":
            let separator = try argument(0, "d").map { v throws(JinjaError) in try text(v, for: name) } ?? JinjaString()
            var result = JinjaString()
            for (index, item) in try iterate(value).enumerated() {
                if index > 0 { result.append(separator) }
                result.append(item.rendered())
                if result.utf8Count > limits.maxValueSize {
                    throw .limitExceeded(.valueSize, limit: limits.maxValueSize)
                }
            }
            return .string(result)
        case "int":
            switch value {
            case .int: return value
            case .bool(let flag): return .int(flag ? 1 : 0)
            case .double(let number):
                guard number.isFinite, abs(number) < 9e18 else { return .int(0) }
                return .int(Int(number))
            case .string(let text):
                return .int(
                    Int(text.text.trimmingCharacters(in: .whitespaces)) ?? (argument(0, "default")?.integer ?? 0))
            default: return argument(0, "default") ?? .int(0)
            }
        case "float":
            if let number = value.numeric { return .double(number) }
            if case .string(let text) = value, let number = Double(text.text.trimmingCharacters(in: .whitespaces)) {
                return .double(number)
            }
            return .double(0)
        case "abs":
            switch value {
            case .int(let number) where number != Int.min: return .int(abs(number))
            case .double(let number): return .double(abs(number))
            default: throw .evaluation("abs needs a number")
            }
        case "indent":
            return .string(try indent(try text(value, for: name), arguments, named))
        case "tojson":
            let indentWidth = argument(0, "indent")?.integer
            let json = try JinjaJSON.encode(value, indent: indentWidth, sortKeys: named["sort_keys"]?.isTruthy ?? false)
            return .string(json, origin: value.containsData ? .data : .template)
        case "dictsort":
            guard case .dict(let pairs) = value else { throw .evaluation("dictsort needs a dict") }
            return .list(
                pairs.sorted { $0.key.lowercased() < $1.key.lowercased() }.map {
                    .list([.string($0.key, origin: .data), $0.value])
                })
        case "map":
            guard case .string(let attributeName)? = named["attribute"] else {
                guard case .string(let filterName)? = arguments.first else {
                    throw .evaluation("map needs a filter name")
                }
                var mapped: [JinjaValue] = []
                for item in try iterate(value) {
                    mapped.append(try applyFilter(filterName.text, to: item, Array(arguments.dropFirst()), [:]))
                }
                return .list(mapped)
            }
            var mapped: [JinjaValue] = []
            for item in try iterate(value) {
                let found = try item.isUndefined ? item : attribute(of: item, attributeName.text)
                mapped.append(found.isUndefined ? (named["default"] ?? found) : found)
            }
            return .list(mapped)
        case "select", "reject", "selectattr", "rejectattr":
            let byAttribute = name.hasSuffix("attr")
            let keep = name.hasPrefix("select")
            var rest = arguments
            var attributeName: String?
            if byAttribute {
                guard case .string(let attributeText)? = rest.first else {
                    throw .evaluation("\(name) needs an attribute")
                }
                attributeName = attributeText.text
                rest.removeFirst()
            }
            var kept: [JinjaValue] = []
            for item in try iterate(value) {
                let subject = try attributeName.map { key throws(JinjaError) in try attribute(of: item, key) } ?? item
                var passes = subject.isTruthy
                if case .string(let testName)? = rest.first {
                    passes = try applyTest(testName.text, to: subject, Array(rest.dropFirst()))
                }
                if passes == keep { kept.append(item) }
            }
            return .list(kept)
        case "unique":
            var seen: [JinjaValue] = []
            for item in try iterate(value) where !seen.contains(where: { $0.equals(item) }) { seen.append(item) }
            return .list(seen)
        case "min", "max", "sort":
            var items = try iterate(value)
            var failure: JinjaError?
            items.sort { a, b in
                do throws(JinjaError) { return try compare(a, b) < 0 } catch {
                    failure = error
                    return false
                }
            }
            if let failure { throw failure }
            if name == "sort" { return .list(argument(0, "reverse")?.isTruthy == true ? items.reversed() : items) }
            return (name == "min" ? items.first : items.last) ?? .undefined(name)
        case "round":
            guard let number = value.numeric else { throw .evaluation("round needs a number") }
            let digits = argument(0, "precision")?.integer ?? 0
            let scale = pow(10, Double(max(-20, min(20, digits))))
            return .double((number * scale).rounded(.toNearestOrEven) / scale)
        case "wordcount":
            return .int(try text(value, for: name).split(nil).count)
        default:
            throw .evaluation("unknown filter '\(name)'")
        }
    }

    /// The value as a string for a string filter; undefined counts as the empty string.
    func text(_ value: JinjaValue, for filter: String) throws(JinjaError) -> JinjaString {
        switch value {
        case .string(let text): return text
        case .undefined: return JinjaString()
        default: return value.rendered()
        }
    }

    /// jinja2's `indent(width=4, first=False, blank=False)`: indents every line but the first
    /// (and blank lines only with `blank`).
    private func indent(_ text: JinjaString, _ arguments: [JinjaValue], _ named: [String: JinjaValue])
        throws(JinjaError) -> JinjaString
    {
        let widthValue = arguments.first ?? named["width"] ?? .int(4)
        let prefix: JinjaString
        if case .string(let given) = widthValue {
            prefix = given
        } else {
            let width = widthValue.integer ?? 4
            guard width >= 0 && width <= 1024 else { throw .evaluation("indent width out of range") }
            prefix = JinjaString(String(repeating: " ", count: width), origin: .template)
        }
        let first = (arguments.count > 1 ? arguments[1] : named["first"])?.isTruthy ?? false
        let blank = (arguments.count > 2 ? arguments[2] : named["blank"])?.isTruthy ?? false
        let lines = text.split("\n")
        var result = JinjaString()
        for (index, line) in lines.enumerated() {
            if index > 0 { result.append("\n", origin: .template) }
            if (index > 0 || first) && (blank || !line.stripped(leading: true, trailing: true).isEmpty) {
                result.append(prefix)
            }
            result.append(line)
            if result.utf8Count > limits.maxValueSize { throw .limitExceeded(.valueSize, limit: limits.maxValueSize) }
        }
        return result
    }
}
