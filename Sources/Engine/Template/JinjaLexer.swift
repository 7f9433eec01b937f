/// Splits template source into tokens, applying Jinja's whitespace control: `{%-`/`-%}` (and
/// the same on `{{ }}` and `{# #}`) strip whitespace on that side, and the `trimBlocks` /
/// `lstripBlocks` settings Hugging Face enables for chat templates: the first newline after a
/// block or comment tag is removed, and spaces and tabs before one at the start of a line too
/// (`{%+` turns that off for one tag).
struct JinjaLexer {
    let scalars: [Unicode.Scalar]
    let trimBlocks: Bool
    let lstripBlocks: Bool
    private var position = 0
    private var line = 1
    private var tokens: [JinjaLexeme] = []

    init(_ source: String, trimBlocks: Bool = true, lstripBlocks: Bool = true) {
        self.scalars = Array(source.unicodeScalars)
        self.trimBlocks = trimBlocks
        self.lstripBlocks = lstripBlocks
    }

    static func tokenize(_ source: String, trimBlocks: Bool = true, lstripBlocks: Bool = true) throws(JinjaError)
        -> [JinjaLexeme]
    {
        var lexer = JinjaLexer(source, trimBlocks: trimBlocks, lstripBlocks: lstripBlocks)
        try lexer.run()
        return lexer.tokens
    }

    private func at(_ index: Int) -> Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private enum After { case nothing, stripAll, dropNewline }

    private mutating func run() throws(JinjaError) {
        var after = After.nothing
        while position < scalars.count {
            let tagStart = nextTag(from: position)
            var text = Array(scalars[position..<(tagStart ?? scalars.count)])
            var startsLine = position == 0 || scalars[position - 1] == "\n"
            switch after {
            case .stripAll:
                let keep = text.firstIndex { !$0.properties.isWhitespace } ?? text.count
                text.removeFirst(keep)
            case .dropNewline:
                if text.first == "\n" {
                    text.removeFirst()
                    startsLine = true
                } else if text.count >= 2 && text[0] == "\r" && text[1] == "\n" {
                    text.removeFirst(2)
                    startsLine = true
                }
            case .nothing: break
            }
            guard let tagStart else {
                emitText(text)
                position = scalars.count
                break
            }
            let kind = scalars[tagStart + 1]
            let modifier = at(tagStart + 2)
            if modifier == "-" {
                while let last = text.last, last.properties.isWhitespace { text.removeLast() }
            } else if kind != "{" && lstripBlocks && modifier != "+" {
                lstrip(&text, startsLine: startsLine)
            }
            emitText(text)
            countLines(position, tagStart)
            position = tagStart + 2 + ((modifier == "-" || modifier == "+") ? 1 : 0)
            after = try lexTag(kind: kind, startLine: line)
        }
    }

    /// Removes spaces and tabs between the last line start and the tag, if nothing else is there.
    private func lstrip(_ text: inout [Unicode.Scalar], startsLine: Bool) {
        var index = text.count
        while index > 0, text[index - 1] == " " || text[index - 1] == "\t" { index -= 1 }
        if index == 0 {
            if startsLine { text.removeAll() }
        } else if text[index - 1] == "\n" {
            text.removeSubrange(index...)
        }
    }

    private func nextTag(from start: Int) -> Int? {
        var index = start
        while index + 1 < scalars.count {
            if scalars[index] == "{" {
                let next = scalars[index + 1]
                if next == "{" || next == "%" || next == "#" { return index }
            }
            index += 1
        }
        return nil
    }

    private mutating func emitText(_ text: [Unicode.Scalar]) {
        guard !text.isEmpty else { return }
        var string = String.UnicodeScalarView()
        string.append(contentsOf: text)
        tokens.append(JinjaLexeme(token: .text(String(string)), line: line))
    }

    private mutating func countLines(_ from: Int, _ to: Int) {
        for index in from..<to where scalars[index] == "\n" { line += 1 }
    }

    private func syntax(_ message: String) -> JinjaError { .syntax(line: line, message: message) }

    /// Lexes from just inside `{{`, `{%` or `{#` to past its closing delimiter.
    private mutating func lexTag(kind: Unicode.Scalar, startLine: Int) throws(JinjaError) -> After {
        if kind == "#" {
            var index = position
            while index + 1 < scalars.count, !(scalars[index] == "#" && scalars[index + 1] == "}") { index += 1 }
            guard index + 1 < scalars.count else { throw syntax("unterminated comment") }
            let minus = index > position && scalars[index - 1] == "-"
            countLines(position, index + 2)
            position = index + 2
            return minus ? .stripAll : (trimBlocks ? .dropNewline : .nothing)
        }
        let isExpression = kind == "{"
        tokens.append(JinjaLexeme(token: isExpression ? .expressionStart : .statementStart, line: line))
        let close: Unicode.Scalar = isExpression ? "}" : "%"
        var depth = 0
        while true {
            guard let c = at(position) else {
                throw syntax(isExpression ? "unterminated '{{'" : "unterminated '{%'")
            }
            if depth == 0 {
                if c == close && at(position + 1) == "}" {
                    position += 2
                    tokens.append(JinjaLexeme(token: isExpression ? .expressionEnd : .statementEnd, line: line))
                    return isExpression ? .nothing : (trimBlocks ? .dropNewline : .nothing)
                }
                if (c == "-" || c == "+") && at(position + 1) == close && at(position + 2) == "}" {
                    position += 3
                    tokens.append(JinjaLexeme(token: isExpression ? .expressionEnd : .statementEnd, line: line))
                    if c == "-" { return .stripAll }
                    return .nothing
                }
            }
            if c == "\n" { line += 1 }
            if c.properties.isWhitespace {
                position += 1
                continue
            }
            if c == "_" || c.properties.isAlphabetic && c.isASCII {
                var end = position
                while let d = at(end),
                    d == "_" || (d.isASCII && (d.properties.isAlphabetic || d.properties.numericType != nil))
                {
                    end += 1
                }
                append(.name(string(position, end)))
                position = end
            } else if c.isASCII && c.properties.numericType != nil {
                try lexNumber()
            } else if c == "'" || c == "\"" {
                try lexString(quote: c)
            } else {
                let two = at(position + 1).map { String(c) + String($0) } ?? ""
                if ["//", "**", "==", "!=", "<=", ">="].contains(two) {
                    append(.symbol(two))
                    position += 2
                } else if "+-*/%~<>=()[]{},.:|".unicodeScalars.contains(c) {
                    if c == "(" || c == "[" || c == "{" { depth += 1 }
                    if c == ")" || c == "]" || c == "}" { depth = max(0, depth - 1) }
                    append(.symbol(String(c)))
                    position += 1
                } else {
                    throw syntax("unexpected character '\(c)'")
                }
            }
        }
    }

    private mutating func append(_ token: JinjaToken) { tokens.append(JinjaLexeme(token: token, line: line)) }

    private func string(_ from: Int, _ to: Int) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[from..<to])
        return String(view)
    }

    private static func isDigit(_ c: Unicode.Scalar?) -> Bool {
        guard let c else { return false }
        return c >= "0" && c <= "9"
    }

    private mutating func lexNumber() throws(JinjaError) {
        var end = position
        while Self.isDigit(at(end)) || at(end) == "_" { end += 1 }
        var isFloat = false
        if at(end) == ".", Self.isDigit(at(end + 1)) {
            isFloat = true
            end += 1
            while Self.isDigit(at(end)) { end += 1 }
        }
        if at(end) == "e" || at(end) == "E" {
            var exponent = end + 1
            if at(exponent) == "+" || at(exponent) == "-" { exponent += 1 }
            if Self.isDigit(at(exponent)) {
                isFloat = true
                end = exponent
                while Self.isDigit(at(end)) { end += 1 }
            }
        }
        let text = string(position, end).replacingOccurrences(of: "_", with: "")
        position = end
        if isFloat {
            guard let value = Double(text) else { throw syntax("bad number \(text)") }
            append(.float(value))
        } else {
            guard let value = Int(text) else { throw syntax("integer \(text) is too large") }
            append(.integer(value))
        }
    }

    /// A quoted string with Python's escapes (`\n`, `\t`, `\\`, quotes, `\xhh`, `\uhhhh`, …);
    /// an unknown escape keeps its backslash, as in Python.
    private mutating func lexString(quote: Unicode.Scalar) throws(JinjaError) {
        var view = String.UnicodeScalarView()
        var index = position + 1
        while true {
            guard let c = at(index) else { throw syntax("unterminated string") }
            if c == quote { break }
            if c == "\n" { line += 1 }
            if c == "\\", let e = at(index + 1) {
                index += 2
                switch e {
                case "n": view.append("\n")
                case "t": view.append("\t")
                case "r": view.append("\r")
                case "0": view.append("\0")
                case "b": view.append("\u{08}")
                case "f": view.append("\u{0C}")
                case "v": view.append("\u{0B}")
                case "a": view.append("\u{07}")
                case "\\", "'", "\"": view.append(e)
                case "\n": line += 1
                case "x", "u", "U":
                    let count = e == "x" ? 2 : (e == "u" ? 4 : 8)
                    guard index + count <= scalars.count, let code = UInt32(string(index, index + count), radix: 16),
                        let scalar = Unicode.Scalar(code)
                    else { throw syntax("bad \\\(e) escape in string") }
                    view.append(scalar)
                    index += count
                default:
                    view.append("\\")
                    view.append(e)
                }
                continue
            }
            view.append(c)
            index += 1
        }
        append(.string(String(view)))
        position = index + 1
    }
}
