import Foundation

/// Expressions: names, literals, attribute and item access, slices, calls, operators.
extension JinjaEvaluator {
    func evaluate(_ expression: JinjaExpression) throws(JinjaError) -> JinjaValue {
        try step()
        try enter()
        defer { leave() }
        switch expression {
        case .literal(let value):
            return value
        case .name(let name):
            return lookup(name)
        case .list(let items):
            var values: [JinjaValue] = []
            for item in items { values.append(try evaluate(item)) }
            return try checkedNesting(.list(values))
        case .dict(let pairs):
            var values: [(key: String, value: JinjaValue)] = []
            for pair in pairs {
                guard case .string(let key) = try evaluate(pair.key) else {
                    throw .evaluation("dict keys must be strings")
                }
                let value = try evaluate(pair.value)
                if let index = values.firstIndex(where: { $0.key == key.text }) {
                    values[index].value = value
                } else {
                    values.append((key.text, value))
                }
            }
            return try checkedNesting(.dict(values))
        case .attribute(let base, let name):
            return try attribute(of: try evaluate(base), name)
        case .item(let base, let key):
            return try item(of: try evaluate(base), try evaluate(key))
        case .slice(let base, let start, let stop, let stepExpression):
            return try slice(
                try evaluate(base), start: try start.map { e throws(JinjaError) in try evaluate(e) },
                stop: try stop.map { e throws(JinjaError) in try evaluate(e) },
                step: try stepExpression.map { e throws(JinjaError) in try evaluate(e) })
        case .call(let callee, let arguments):
            let function = try evaluate(callee)
            let (positional, named) = try evaluateArguments(arguments)
            return try call(function, positional, named, calleeExpression: callee)
        case .filter(let base, let name, let arguments):
            let value = try evaluate(base)
            let (positional, named) = try evaluateArguments(arguments)
            return try checked(try applyFilter(name, to: value, positional, named))
        case .test(let base, let name, let arguments, let negated):
            let value = try evaluate(base)
            let (positional, _) = try evaluateArguments(arguments)
            return .bool(try applyTest(name, to: value, positional) != negated)
        case .not(let operand):
            return .bool(!(try evaluate(operand).isTruthy))
        case .negate(let operand):
            switch try evaluate(operand) {
            case .int(let value):
                guard value != Int.min else { throw .evaluation("integer overflow") }
                return .int(-value)
            case .double(let value): return .double(-value)
            case .bool(let value): return .int(value ? -1 : 0)
            case let other: throw .evaluation("cannot negate a \(other.typeName)")
            }
        case .binary(.and, let left, let right):
            let value = try evaluate(left)
            return value.isTruthy ? try evaluate(right) : value
        case .binary(.or, let left, let right):
            let value = try evaluate(left)
            return value.isTruthy ? value : try evaluate(right)
        case .binary(let op, let left, let right):
            return try checked(try binary(op, try evaluate(left), try evaluate(right)))
        case .conditional(let condition, let then, let otherwise):
            if try evaluate(condition).isTruthy { return try evaluate(then) }
            guard let otherwise else { return .undefined("conditional") }
            return try evaluate(otherwise)
        }
    }

    private func evaluateArguments(_ arguments: [JinjaExpression.Argument]) throws(JinjaError) -> (
        [JinjaValue], [String: JinjaValue]
    ) {
        var positional: [JinjaValue] = []
        var named: [String: JinjaValue] = [:]
        for argument in arguments {
            let value = try evaluate(argument.value)
            if let name = argument.name { named[name] = value } else { positional.append(value) }
        }
        return (positional, named)
    }

    /// `value.name`: a method if the value has one by that name (as Python's `getattr` finds
    /// `dict.items` first), else the dict's item or namespace attribute; undefined if absent.
    func attribute(of value: JinjaValue, _ name: String) throws(JinjaError) -> JinjaValue {
        switch value {
        case .undefined(let base):
            throw .evaluation("'\(base)' is undefined, so it has no attribute '\(name)'")
        case .namespace(let namespace):
            return namespace[name] ?? .undefined(name)
        case .dict(let pairs):
            if Self.dictMethods.contains(name) { return .method(value, name) }
            return pairs.first { $0.key == name }?.value ?? .undefined(name)
        case .string:
            return Self.stringMethods.contains(name) ? .method(value, name) : .undefined(name)
        default:
            return .undefined(name)
        }
    }

    /// `value[key]`: list index (negative counts from the end), dict key, string character.
    func item(of value: JinjaValue, _ key: JinjaValue) throws(JinjaError) -> JinjaValue {
        switch (value, key) {
        case (.undefined(let base), _):
            throw .evaluation("'\(base)' is undefined, so it cannot be indexed")
        case (.list(let items), _):
            guard let index = key.integer else { return .undefined("item") }
            let position = index < 0 ? items.count + index : index
            guard position >= 0 && position < items.count else { return .undefined("item") }
            return items[position]
        case (.dict(let pairs), .string(let name)):
            return pairs.first { $0.key == name.text }?.value ?? .undefined(name.text)
        case (.namespace(let namespace), .string(let name)):
            return namespace[name.text] ?? .undefined(name.text)
        case (.string(let text), _):
            guard let index = key.integer else { return .undefined("item") }
            let pairs = text.scalarsWithOrigins
            let position = index < 0 ? pairs.count + index : index
            guard position >= 0 && position < pairs.count else { return .undefined("item") }
            return .string(JinjaString.from(pairs[position...position]))
        default:
            return .undefined("item")
        }
    }

    /// Python slicing `[start:stop:step]` of lists and strings.
    func slice(_ value: JinjaValue, start: JinjaValue?, stop: JinjaValue?, step stepValue: JinjaValue?)
        throws(JinjaError) -> JinjaValue
    {
        func bound(_ value: JinjaValue?) throws(JinjaError) -> Int? {
            guard let value, !(value.isUndefined), !(value.equals(.none)) else { return nil }
            guard let number = value.integer else { throw .evaluation("slice bounds must be integers") }
            return number
        }
        let stride = try bound(stepValue) ?? 1
        guard stride != 0 else { throw .evaluation("slice step cannot be zero") }
        func indices(_ count: Int) throws(JinjaError) -> [Int] {
            func clamp(_ raw: Int?, _ fallback: Int, low: Int, high: Int) -> Int {
                guard let raw else { return fallback }
                let adjusted = raw < 0 ? raw + count : raw
                return min(max(adjusted, low), high)
            }
            var result: [Int] = []
            if stride > 0 {
                var index = clamp(try bound(start), 0, low: 0, high: count)
                let end = clamp(try bound(stop), count, low: 0, high: count)
                while index < end {
                    result.append(index)
                    let (next, overflow) = index.addingReportingOverflow(stride)
                    if overflow { break }
                    index = next
                }
            } else {
                var index = clamp(try bound(start), count - 1, low: -1, high: count - 1)
                let end = clamp(try bound(stop), -1, low: -1, high: count - 1)
                while index > end {
                    result.append(index)
                    let (next, overflow) = index.addingReportingOverflow(stride)
                    if overflow { break }
                    index = next
                }
            }
            return result
        }
        switch value {
        case .list(let items):
            return .list(try indices(items.count).map { items[$0] })
        case .string(let text):
            let pairs = text.scalarsWithOrigins
            let picked = try indices(pairs.count).map { pairs[$0] }
            return .string(JinjaString.from(picked[...]))
        case .undefined(let base):
            throw .evaluation("'\(base)' is undefined, so it cannot be sliced")
        default:
            throw .evaluation("a \(value.typeName) cannot be sliced")
        }
    }

    private func call(
        _ function: JinjaValue, _ positional: [JinjaValue], _ named: [String: JinjaValue],
        calleeExpression: JinjaExpression
    ) throws(JinjaError) -> JinjaValue {
        switch function {
        case .macro(let macro):
            return try call(macro, positional, named)
        case .method(let receiver, let name):
            return try checked(try callMethod(name, on: receiver, positional, named))
        case .function("raise_exception"):
            throw .raised(positional.first?.rendered().text ?? "raise_exception called")
        case .function("strftime_now"):
            guard let now, case .string(let format)? = positional.first else {
                throw .evaluation("strftime_now takes a format string")
            }
            return try checked(.string(try now.formatted(format.text), origin: .data))
        case .function("namespace"), .function("dict"):
            var pairs: [(key: String, value: JinjaValue)] = []
            if case .dict(let initial)? = positional.first { pairs = initial }
            for key in named.keys.sorted() { pairs.append((key, named[key] ?? .none)) }
            if case .function("dict") = function { return try checkedNesting(.dict(pairs)) }
            return .namespace(JinjaNamespace(pairs))
        case .function("range"):
            let numbers = positional.compactMap(\.integer)
            guard numbers.count == positional.count, (1...3).contains(numbers.count) else {
                throw .evaluation("range takes one to three integers")
            }
            let start = numbers.count == 1 ? 0 : numbers[0]
            let end = numbers.count == 1 ? numbers[0] : numbers[1]
            let stride = numbers.count == 3 ? numbers[2] : 1
            guard stride != 0 else { throw .evaluation("range step cannot be zero") }
            var values: [JinjaValue] = []
            var value = start
            while stride > 0 ? value < end : value > end {
                guard values.count < limits.maxLoopIterations else {
                    throw .limitExceeded(.loopIterations, limit: limits.maxLoopIterations)
                }
                values.append(.int(value))
                let (next, overflow) = value.addingReportingOverflow(stride)
                if overflow { break }
                value = next
            }
            return try checked(.list(values))
        case .undefined(let name):
            if name == "strftime_now" {
                throw .evaluation(
                    "strftime_now is not available: templates read no clock, and this rendering was given no time")
            }
            throw .evaluation("'\(name)' is undefined and cannot be called")
        default:
            throw .evaluation("a \(function.typeName) cannot be called")
        }
    }

    func binary(_ op: JinjaExpression.BinaryOperator, _ left: JinjaValue, _ right: JinjaValue) throws(JinjaError)
        -> JinjaValue
    {
        switch op {
        case .equal: return .bool(left.equals(right))
        case .notEqual: return .bool(!left.equals(right))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let order = try compare(left, right)
            switch op {
            case .less: return .bool(order < 0)
            case .lessOrEqual: return .bool(order <= 0)
            case .greater: return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        case .in: return .bool(try contains(right, left))
        case .notIn: return .bool(!(try contains(right, left)))
        case .concat: return .string(left.rendered() + right.rendered())
        case .add:
            switch (left, right) {
            case (.string(let a), .string(let b)): return .string(a + b)
            case (.list(let a), .list(let b)):
                guard a.count + b.count <= limits.maxValueSize else {
                    throw .limitExceeded(.valueSize, limit: limits.maxValueSize)
                }
                return .list(a + b)
            default: return try arithmetic(op, left, right)
            }
        case .multiply:
            switch (left, right) {
            case (.string(let text), .int(let count)), (.int(let count), .string(let text)):
                return .string(try repeated(text, count))
            case (.list(let items), .int(let count)), (.int(let count), .list(let items)):
                guard count <= 0 || items.count <= limits.maxValueSize / count else {
                    throw .limitExceeded(.valueSize, limit: limits.maxValueSize)
                }
                return .list(Array([[JinjaValue]](repeating: items, count: max(0, count)).joined()))
            default: return try arithmetic(op, left, right)
            }
        default:
            return try arithmetic(op, left, right)
        }
    }

    private func repeated(_ text: JinjaString, _ count: Int) throws(JinjaError) -> JinjaString {
        guard count > 0 else { return JinjaString() }
        guard text.utf8Count <= limits.maxValueSize / count else {
            throw .limitExceeded(.valueSize, limit: limits.maxValueSize)
        }
        var result = JinjaString()
        for _ in 0..<count { result.append(text) }
        return result
    }

    private func arithmetic(_ op: JinjaExpression.BinaryOperator, _ left: JinjaValue, _ right: JinjaValue)
        throws(JinjaError) -> JinjaValue
    {
        if let a = left.integer, let b = right.integer {
            switch op {
            case .add, .subtract, .multiply:
                let (result, overflow) =
                    op == .add
                    ? a.addingReportingOverflow(b)
                    : op == .subtract ? a.subtractingReportingOverflow(b) : a.multipliedReportingOverflow(by: b)
                if overflow { throw .evaluation("integer overflow") }
                return .int(result)
            case .divide:
                guard b != 0 else { throw .evaluation("division by zero") }
                return .double(Double(a) / Double(b))
            case .floorDivide, .modulo:
                guard b != 0 else { throw .evaluation("division by zero") }
                guard !(a == Int.min && b == -1) else { throw .evaluation("integer overflow") }
                var quotient = a / b
                var remainder = a % b
                if remainder != 0 && ((remainder < 0) != (b < 0)) {
                    quotient -= 1
                    remainder += b
                }
                return .int(op == .floorDivide ? quotient : remainder)
            case .power:
                guard b >= 0 else { return .double(pow(Double(a), Double(b))) }
                var result = 1
                for _ in 0..<min(b, 64) {
                    let (next, overflow) = result.multipliedReportingOverflow(by: a)
                    if overflow { throw .evaluation("integer overflow") }
                    result = next
                }
                if b > 64 && abs(a) > 1 { throw .evaluation("integer overflow") }
                return .int(b > 64 && a == -1 ? (b % 2 == 0 ? 1 : -1) : result)
            default: break
            }
        }
        guard let a = left.numeric, let b = right.numeric else {
            throw .evaluation("cannot apply '\(op.rawValue)' to a \(left.typeName) and a \(right.typeName)")
        }
        switch op {
        case .add: return .double(a + b)
        case .subtract: return .double(a - b)
        case .multiply: return .double(a * b)
        case .divide:
            guard b != 0 else { throw .evaluation("division by zero") }
            return .double(a / b)
        case .floorDivide:
            guard b != 0 else { throw .evaluation("division by zero") }
            return .double((a / b).rounded(.down))
        case .modulo:
            guard b != 0 else { throw .evaluation("division by zero") }
            return .double(a - b * (a / b).rounded(.down))
        case .power: return .double(pow(a, b))
        default: throw .evaluation("cannot apply '\(op.rawValue)'")
        }
    }

    func compare(_ left: JinjaValue, _ right: JinjaValue) throws(JinjaError) -> Int {
        if let a = left.numeric, let b = right.numeric { return a < b ? -1 : (a > b ? 1 : 0) }
        if case .string(let a) = left, case .string(let b) = right {
            let x = Array(a.text.unicodeScalars).map(\.value)
            let y = Array(b.text.unicodeScalars).map(\.value)
            return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        }
        throw .evaluation("cannot compare a \(left.typeName) with a \(right.typeName)")
    }

    func contains(_ container: JinjaValue, _ element: JinjaValue) throws(JinjaError) -> Bool {
        switch container {
        case .string(let text):
            guard case .string(let needle) = element else {
                throw .evaluation("'in <string>' needs a string on the left")
            }
            return needle.isEmpty
                || !JinjaString.occurrences(
                    of: Array(needle.text.unicodeScalars), in: Array(text.text.unicodeScalars)
                ).isEmpty
        case .list(let items): return items.contains { $0.equals(element) }
        case .dict(let pairs):
            guard case .string(let key) = element else { return false }
            return pairs.contains { $0.key == key.text }
        case .namespace(let namespace):
            guard case .string(let key) = element else { return false }
            return namespace[key.text] != nil
        case .undefined: return false
        default: throw .evaluation("a \(container.typeName) does not support 'in'")
        }
    }
}
