/// An expression inside `{{ }}` or a statement, as parsed.
indirect enum JinjaExpression {
    enum BinaryOperator: String {
        case add = "+", subtract = "-", multiply = "*", divide = "/", floorDivide = "//", modulo = "%"
        case power = "**", concat = "~"
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case and, or, `in`, notIn = "not in"
    }

    struct Argument {
        let name: String?
        let value: JinjaExpression
    }

    case literal(JinjaValue)
    case name(String)
    case list([JinjaExpression])
    case dict([(key: JinjaExpression, value: JinjaExpression)])
    case attribute(JinjaExpression, String)
    case item(JinjaExpression, JinjaExpression)
    case slice(JinjaExpression, start: JinjaExpression?, stop: JinjaExpression?, step: JinjaExpression?)
    case call(JinjaExpression, [Argument])
    case filter(JinjaExpression, name: String, [Argument])
    case test(JinjaExpression, name: String, [Argument], negated: Bool)
    case not(JinjaExpression)
    case negate(JinjaExpression)
    case binary(BinaryOperator, JinjaExpression, JinjaExpression)
    case conditional(JinjaExpression, then: JinjaExpression, otherwise: JinjaExpression?)
}
