/// The tests of `value is name(arguments)`.
extension JinjaEvaluator {
    func applyTest(_ name: String, to value: JinjaValue, _ arguments: [JinjaValue]) throws(JinjaError) -> Bool {
        let other = arguments.first ?? .undefined("argument")
        switch name {
        case "defined": return !value.isUndefined
        case "undefined": return value.isUndefined
        case "none": return value.equals(.none) && !value.isUndefined
        case "string": if case .string = value { return true } else { return false }
        case "mapping": if case .dict = value { return true } else { return false }
        case "boolean": if case .bool = value { return true } else { return false }
        case "true": if case .bool(true) = value { return true } else { return false }
        case "false": if case .bool(false) = value { return true } else { return false }
        case "integer": if case .int = value { return true } else { return false }
        case "float": if case .double = value { return true } else { return false }
        case "number":
            switch value {
            case .int, .double, .bool: return true
            default: return false
            }
        case "iterable":
            switch value {
            case .list, .dict, .string, .undefined: return true
            default: return false
            }
        case "sequence":
            switch value {
            case .list, .dict, .string: return true
            default: return false
            }
        case "callable":
            switch value {
            case .macro, .function, .method: return true
            default: return false
            }
        case "odd", "even":
            guard let number = value.integer else { throw .evaluation("'\(name)' needs an integer") }
            return (number % 2 != 0) == (name == "odd")
        case "divisibleby":
            guard let number = value.integer, let divisor = other.integer, divisor != 0 else {
                throw .evaluation("'divisibleby' needs integers")
            }
            return number % divisor == 0
        case "equalto", "eq", "==", "sameas": return value.equals(other)
        case "ne", "!=": return !value.equals(other)
        case "lt", "<": return try compare(value, other) < 0
        case "le", "<=": return try compare(value, other) <= 0
        case "gt", ">", "greaterthan": return try compare(value, other) > 0
        case "ge", ">=": return try compare(value, other) >= 0
        case "in": return try contains(other, value)
        case "lower", "upper":
            guard case .string(let text) = value else { return false }
            return name == "lower" ? text.text == text.text.lowercased() : text.text == text.text.uppercased()
        default:
            throw .evaluation("unknown test '\(name)'")
        }
    }
}
