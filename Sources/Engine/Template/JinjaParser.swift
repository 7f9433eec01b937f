/// Parses tokens into a template's nodes (statements here, expressions in
/// `JinjaParser+Expressions.swift`). Recursive descent with a nesting bound, so deeply nested
/// input fails with `JinjaError.limitExceeded(.nesting)` instead of overflowing the stack.
struct JinjaParser {
    let tokens: [JinjaLexeme]
    let maxNesting: Int
    var index = 0
    var depth = 0

    init(tokens: [JinjaLexeme], maxNesting: Int) {
        self.tokens = tokens
        self.maxNesting = maxNesting
    }

    static func parse(_ source: String, limits: JinjaLimits) throws(JinjaError) -> [JinjaNode] {
        var parser = JinjaParser(tokens: try JinjaLexer.tokenize(source), maxNesting: limits.maxNesting)
        let (nodes, end) = try parser.parseBody(until: [])
        if let end { throw parser.syntax("unexpected '{% \(end) %}'") }
        return nodes
    }

    var current: JinjaToken { index < tokens.count ? tokens[index].token : .end }
    var line: Int { index < tokens.count ? tokens[index].line : (tokens.last?.line ?? 1) }

    func syntax(_ message: String) -> JinjaError { .syntax(line: line, message: message) }

    mutating func advance() { index += 1 }

    mutating func enter() throws(JinjaError) {
        depth += 1
        if depth > maxNesting { throw .limitExceeded(.nesting, limit: maxNesting) }
    }

    mutating func leave() { depth -= 1 }

    mutating func expect(_ symbol: String) throws(JinjaError) {
        guard current == .symbol(symbol) else { throw syntax("expected '\(symbol)', found \(describe(current))") }
        advance()
    }

    mutating func expectStatementEnd() throws(JinjaError) {
        guard current == .statementEnd else { throw syntax("expected '%}', found \(describe(current))") }
        advance()
    }

    mutating func expectName() throws(JinjaError) -> String {
        guard case .name(let name) = current else { throw syntax("expected a name, found \(describe(current))") }
        advance()
        return name
    }

    func isKeyword(_ word: String) -> Bool { current == .name(word) }

    func describe(_ token: JinjaToken) -> String {
        switch token {
        case .text: return "text"
        case .expressionStart: return "'{{'"
        case .expressionEnd: return "'}}'"
        case .statementStart: return "'{%'"
        case .statementEnd: return "'%}'"
        case .name(let name): return "'\(name)'"
        case .string: return "a string"
        case .integer, .float: return "a number"
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "the end of the template"
        }
    }

    /// Nodes up to a `{% word %}` with `word` in `ends` (returned, its tag's name consumed) or
    /// the end of the template (nil). An unexpected end tag is returned for the caller to reject.
    mutating func parseBody(until ends: Set<String>) throws(JinjaError) -> ([JinjaNode], String?) {
        try enter()
        defer { leave() }
        var nodes: [JinjaNode] = []
        while true {
            switch current {
            case .end:
                return (nodes, nil)
            case .text(let text):
                nodes.append(.text(text))
                advance()
            case .expressionStart:
                advance()
                let expression = try parseExpression()
                guard current == .expressionEnd else { throw syntax("expected '}}', found \(describe(current))") }
                advance()
                nodes.append(.output(expression))
            case .statementStart:
                advance()
                guard case .name(let word) = current else { throw syntax("expected a statement name") }
                if ends.contains(word) {
                    advance()
                    return (nodes, word)
                }
                if word.hasPrefix("end") || word == "else" || word == "elif" {
                    throw syntax("unexpected '{% \(word) %}'")
                }
                advance()
                nodes.append(try parseStatement(word))
            default:
                throw syntax("unexpected \(describe(current))")
            }
        }
    }

    private mutating func parseStatement(_ word: String) throws(JinjaError) -> JinjaNode {
        switch word {
        case "if": return try parseIf()
        case "for": return try parseFor()
        case "set": return try parseSet()
        case "macro": return try parseMacro()
        case "break", "continue":
            try expectStatementEnd()
            return word == "break" ? .breakLoop : .continueLoop
        case "generation":
            try expectStatementEnd()
            let (body, end) = try parseBody(until: ["endgeneration"])
            guard end != nil else { throw syntax("missing '{% endgeneration %}'") }
            try expectStatementEnd()
            return .group(body)
        default:
            throw syntax("unknown statement '\(word)'")
        }
    }

    private mutating func parseIf() throws(JinjaError) -> JinjaNode {
        var branches: [JinjaNode.Branch] = []
        var condition = try parseExpression()
        while true {
            try expectStatementEnd()
            let (body, end) = try parseBody(until: ["elif", "else", "endif"])
            branches.append(JinjaNode.Branch(condition: condition, body: body))
            switch end {
            case "elif":
                condition = try parseExpression()
            case "else":
                try expectStatementEnd()
                let (otherwise, last) = try parseBody(until: ["endif"])
                guard last != nil else { throw syntax("missing '{% endif %}'") }
                try expectStatementEnd()
                return .conditional(branches, otherwise: otherwise)
            case "endif":
                try expectStatementEnd()
                return .conditional(branches, otherwise: [])
            default:
                throw syntax("missing '{% endif %}'")
            }
        }
    }

    private mutating func parseFor() throws(JinjaError) -> JinjaNode {
        var targets = [try expectName()]
        while current == .symbol(",") {
            advance()
            targets.append(try expectName())
        }
        guard isKeyword("in") else { throw syntax("expected 'in' in for loop") }
        advance()
        let iterable = try parseOr()
        var condition: JinjaExpression?
        if isKeyword("if") {
            advance()
            condition = try parseExpression()
        }
        if isKeyword("recursive") { throw syntax("recursive loops are not supported") }
        try expectStatementEnd()
        let (body, end) = try parseBody(until: ["else", "endfor"])
        var otherwise: [JinjaNode] = []
        if end == "else" {
            try expectStatementEnd()
            let (elseBody, last) = try parseBody(until: ["endfor"])
            guard last != nil else { throw syntax("missing '{% endfor %}'") }
            otherwise = elseBody
        } else if end == nil {
            throw syntax("missing '{% endfor %}'")
        }
        try expectStatementEnd()
        return .loop(
            JinjaNode.Loop(targets: targets, iterable: iterable, condition: condition, body: body, otherwise: otherwise)
        )
    }

    private mutating func parseSet() throws(JinjaError) -> JinjaNode {
        let first = try expectName()
        let target: JinjaNode.Target
        if current == .symbol(".") {
            advance()
            target = .attribute(first, try expectName())
        } else {
            var names = [first]
            while current == .symbol(",") {
                advance()
                names.append(try expectName())
            }
            target = .names(names)
        }
        if current == .symbol("=") {
            advance()
            let value = try parseExpression()
            try expectStatementEnd()
            return .set(target, value)
        }
        try expectStatementEnd()
        let (body, end) = try parseBody(until: ["endset"])
        guard end != nil else { throw syntax("missing '{% endset %}'") }
        try expectStatementEnd()
        return .setBlock(target, body)
    }

    private mutating func parseMacro() throws(JinjaError) -> JinjaNode {
        let name = try expectName()
        try expect("(")
        var parameters: [(name: String, defaultValue: JinjaExpression?)] = []
        while current != .symbol(")") {
            let parameter = try expectName()
            var defaultValue: JinjaExpression?
            if current == .symbol("=") {
                advance()
                defaultValue = try parseExpression()
            }
            parameters.append((parameter, defaultValue))
            if current == .symbol(",") { advance() } else { break }
        }
        try expect(")")
        try expectStatementEnd()
        let (body, end) = try parseBody(until: ["endmacro"])
        guard end != nil else { throw syntax("missing '{% endmacro %}'") }
        try expectStatementEnd()
        return .macro(JinjaMacro(name: name, parameters: parameters, body: body))
    }
}
