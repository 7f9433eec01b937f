/// A shallow reading of a Jinja template: the text it can output, without interpreting it.
///
/// Output text is either template text outside tags or a string literal inside a `{{ }}` or
/// `{% %}` tag (with Jinja's backslash escapes decoded). Comments are skipped.
struct JinjaTemplateText {
    /// Output-text fragments, in template order.
    let literals: [String]
    /// The code inside tags with whitespace outside string literals dropped and every literal
    /// in single quotes, for looking up expressions such as `messages[0]['role']!='system'`.
    let compactCode: String

    init(_ template: String) {
        var literals: [String] = []
        var code = ""
        let characters = Array(template)
        var index = 0
        var outside = ""
        func flushOutside() {
            if !outside.isEmpty { literals.append(outside) }
            outside = ""
        }
        while index < characters.count {
            let character = characters[index]
            let nextCharacter: Character? = index + 1 < characters.count ? characters[index + 1] : nil
            guard character == "{", let opener = nextCharacter, opener == "{" || opener == "%" || opener == "#" else {
                outside.append(character)
                index += 1
                continue
            }
            flushOutside()
            let closer: Character = opener == "{" ? "}" : opener
            index += 2
            if opener == "#" {
                while index + 1 < characters.count && !(characters[index] == "#" && characters[index + 1] == "}") {
                    index += 1
                }
                index += 2
                continue
            }
            // Inside a tag: collect code and string literals until the closing delimiter.
            while index < characters.count {
                let current = characters[index]
                if current == closer && index + 1 < characters.count && characters[index + 1] == "}" {
                    index += 2
                    break
                }
                if current == "'" || current == "\"" {
                    var literal = ""
                    index += 1
                    while index < characters.count && characters[index] != current {
                        if characters[index] == "\\" && index + 1 < characters.count {
                            literal.append(Self.unescape(characters[index + 1]))
                            index += 2
                        } else {
                            literal.append(characters[index])
                            index += 1
                        }
                    }
                    index += 1
                    literals.append(literal)
                    code.append("'\(literal)'")
                    continue
                }
                if !current.isWhitespace { code.append(current) }
                index += 1
            }
            code.append(";")
        }
        flushOutside()
        self.literals = literals
        self.compactCode = code
    }

    private static func unescape(_ character: Character) -> String {
        switch character {
        case "n": return "\n"
        case "t": return "\t"
        case "r": return "\r"
        default: return String(character)
        }
    }
}
