/// One lexical unit of a template: literal text outside tags, tag delimiters, and the tokens
/// inside `{{ }}` and `{% %}`.
enum JinjaToken: Equatable {
    case text(String)
    case expressionStart
    case expressionEnd
    case statementStart
    case statementEnd
    case name(String)
    case string(String)
    case integer(Int)
    case float(Double)
    case symbol(String)
    case end
}

/// A token and the line it starts on (for error messages).
struct JinjaLexeme {
    let token: JinjaToken
    let line: Int
}
