/// Expressions, by Jinja's precedence: conditional, `or`, `and`, `not`, comparisons and `in`,
/// `+ -`, `~`, `* / // %`, `**`, unary minus, then primaries with `.attr`, `[item]`, `[a:b]`,
/// calls, `| filter` and `is test`.
extension JinjaParser {
    mutating func parseExpression() throws(JinjaError) -> JinjaExpression {
        try enter()
        defer { leave() }
        let value = try parseOr()
        guard isKeyword("if") else { return value }
        advance()
        let condition = try parseOr()
        var otherwise: JinjaExpression?
        if isKeyword("else") {
            advance()
            otherwise = try parseExpression()
        }
        return .conditional(condition, then: value, otherwise: otherwise)
    }

    mutating func parseOr() throws(JinjaError) -> JinjaExpression {
        var left = try parseAnd()
        while isKeyword("or") {
            advance()
            left = .binary(.or, left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws(JinjaError) -> JinjaExpression {
        var left = try parseNot()
        while isKeyword("and") {
            advance()
            left = .binary(.and, left, try parseNot())
        }
        return left
    }

    private mutating func parseNot() throws(JinjaError) -> JinjaExpression {
        if isKeyword("not") {
            advance()
            try enter()
            defer { leave() }
            return .not(try parseNot())
        }
        return try parseCompare()
    }

    private mutating func parseCompare() throws(JinjaError) -> JinjaExpression {
        var left = try parseMath1()
        while true {
            if case .symbol(let symbol) = current, let op = JinjaExpression.BinaryOperator(rawValue: symbol),
                ["==", "!=", "<", "<=", ">", ">="].contains(symbol)
            {
                advance()
                left = .binary(op, left, try parseMath1())
            } else if isKeyword("in") {
                advance()
                left = .binary(.in, left, try parseMath1())
            } else if isKeyword("not"), index + 1 < tokens.count, tokens[index + 1].token == .name("in") {
                advance()
                advance()
                left = .binary(.notIn, left, try parseMath1())
            } else {
                return left
            }
        }
    }

    private mutating func parseMath1() throws(JinjaError) -> JinjaExpression {
        var left = try parseConcat()
        while current == .symbol("+") || current == .symbol("-") {
            let op: JinjaExpression.BinaryOperator = current == .symbol("+") ? .add : .subtract
            advance()
            left = .binary(op, left, try parseConcat())
        }
        return left
    }

    private mutating func parseConcat() throws(JinjaError) -> JinjaExpression {
        var left = try parseMath2()
        while current == .symbol("~") {
            advance()
            left = .binary(.concat, left, try parseMath2())
        }
        return left
    }

    private mutating func parseMath2() throws(JinjaError) -> JinjaExpression {
        var left = try parsePower()
        while case .symbol(let symbol) = current, ["*", "/", "//", "%"].contains(symbol),
            let op = JinjaExpression.BinaryOperator(rawValue: symbol)
        {
            advance()
            left = .binary(op, left, try parsePower())
        }
        return left
    }

    private mutating func parsePower() throws(JinjaError) -> JinjaExpression {
        var left = try parseUnary()
        while current == .symbol("**") {
            advance()
            left = .binary(.power, left, try parseUnary())
        }
        return left
    }

    private mutating func parseUnary() throws(JinjaError) -> JinjaExpression {
        if current == .symbol("-") || current == .symbol("+") {
            let negative = current == .symbol("-")
            advance()
            try enter()
            defer { leave() }
            let operand = try parseUnary()
            return negative ? .negate(operand) : operand
        }
        var value = try parsePrimary()
        value = try parsePostfix(value)
        return try parseFiltersAndTests(value)
    }

    private mutating func parsePrimary() throws(JinjaError) -> JinjaExpression {
        try enter()
        defer { leave() }
        let token = current
        advance()
        switch token {
        case .name(let name):
            switch name {
            case "true", "True": return .literal(.bool(true))
            case "false", "False": return .literal(.bool(false))
            case "none", "None": return .literal(.none)
            default: return .name(name)
            }
        case .string(var text):
            while case .string(let more) = current {
                text += more
                advance()
            }
            return .literal(.string(JinjaString(text, origin: .template)))
        case .integer(let value): return .literal(.int(value))
        case .float(let value): return .literal(.double(value))
        case .symbol("("):
            if current == .symbol(")") {
                advance()
                return .list([])
            }
            let first = try parseExpression()
            if current == .symbol(",") {
                var items = [first]
                while current == .symbol(",") {
                    advance()
                    if current == .symbol(")") { break }
                    items.append(try parseExpression())
                }
                try expect(")")
                return .list(items)
            }
            try expect(")")
            return first
        case .symbol("["):
            var items: [JinjaExpression] = []
            while current != .symbol("]") {
                items.append(try parseExpression())
                if current == .symbol(",") { advance() } else { break }
            }
            try expect("]")
            return .list(items)
        case .symbol("{"):
            var pairs: [(key: JinjaExpression, value: JinjaExpression)] = []
            while current != .symbol("}") {
                let key = try parseExpression()
                try expect(":")
                pairs.append((key, try parseExpression()))
                if current == .symbol(",") { advance() } else { break }
            }
            try expect("}")
            return .dict(pairs)
        default:
            index -= 1
            throw syntax("unexpected \(describe(token))")
        }
    }

    private mutating func parsePostfix(_ base: JinjaExpression) throws(JinjaError) -> JinjaExpression {
        var value = base
        var links = 0
        while true {
            links += 1
            if links > maxNesting { throw .limitExceeded(.nesting, limit: maxNesting) }
            if current == .symbol(".") {
                advance()
                switch current {
                case .name(let name):
                    advance()
                    value = .attribute(value, name)
                case .integer(let position):
                    advance()
                    value = .item(value, .literal(.int(position)))
                default:
                    throw syntax("expected an attribute name after '.'")
                }
            } else if current == .symbol("[") {
                advance()
                value = try parseSubscript(value)
            } else if current == .symbol("(") {
                advance()
                value = .call(value, try parseArguments())
            } else {
                return value
            }
        }
    }

    private mutating func parseSubscript(_ base: JinjaExpression) throws(JinjaError) -> JinjaExpression {
        var parts: [JinjaExpression?] = [nil]
        var isSlice = false
        while current != .symbol("]") {
            if current == .symbol(":") {
                isSlice = true
                parts.append(nil)
                advance()
                if parts.count > 3 { throw syntax("a slice has at most three parts") }
            } else {
                guard parts[parts.count - 1] == nil else { throw syntax("expected ']' or ':'") }
                parts[parts.count - 1] = try parseExpression()
            }
        }
        try expect("]")
        if !isSlice {
            guard let item = parts[0] else { throw syntax("empty subscript") }
            return .item(base, item)
        }
        while parts.count < 3 { parts.append(nil) }
        return .slice(base, start: parts[0], stop: parts[1], step: parts[2])
    }

    /// After `(`: positional and `name=value` arguments, through `)`.
    mutating func parseArguments() throws(JinjaError) -> [JinjaExpression.Argument] {
        var arguments: [JinjaExpression.Argument] = []
        while current != .symbol(")") {
            if case .name(let name) = current, index + 1 < tokens.count, tokens[index + 1].token == .symbol("=") {
                advance()
                advance()
                arguments.append(.init(name: name, value: try parseExpression()))
            } else {
                arguments.append(.init(name: nil, value: try parseExpression()))
            }
            if current == .symbol(",") { advance() } else { break }
        }
        try expect(")")
        return arguments
    }

    private mutating func parseFiltersAndTests(_ base: JinjaExpression) throws(JinjaError) -> JinjaExpression {
        var value = base
        var links = 0
        while true {
            links += 1
            if links > maxNesting { throw .limitExceeded(.nesting, limit: maxNesting) }
            if current == .symbol("|") {
                advance()
                let name = try expectName()
                var arguments: [JinjaExpression.Argument] = []
                if current == .symbol("(") {
                    advance()
                    arguments = try parseArguments()
                }
                value = .filter(value, name: name, arguments)
            } else if isKeyword("is") {
                advance()
                var negated = false
                if isKeyword("not") {
                    advance()
                    negated = true
                }
                let name = try expectName()
                var arguments: [JinjaExpression.Argument] = []
                if current == .symbol("(") {
                    advance()
                    arguments = try parseArguments()
                } else if startsBareTestArgument() {
                    arguments = [.init(name: nil, value: try parsePrimary())]
                }
                value = .test(value, name: name, arguments, negated: negated)
            } else {
                return value
            }
        }
    }

    /// `x is divisibleby 3`, `x is sameas none`: a test's single argument may follow without
    /// parentheses when it is a literal or a name that is not an operator keyword.
    private func startsBareTestArgument() -> Bool {
        switch current {
        case .string, .integer, .float: return true
        case .name(let name): return !["and", "or", "not", "in", "is", "if", "else"].contains(name)
        default: return false
        }
    }
}
