@testable import Engine

/// Renders Jinja source for the interpreter tests, with strings given as data by default.
enum JinjaTestSupport {
    static func render(
        _ source: String, _ context: [String: JinjaValue] = [:], limits: JinjaLimits = JinjaLimits()
    ) throws(JinjaError) -> String {
        try JinjaTemplate(source, limits: limits).render(context).text
    }

    static func segments(_ source: String, _ context: [String: JinjaValue] = [:]) throws(JinjaError)
        -> [JinjaString.Segment]
    {
        try JinjaTemplate(source).render(context).segments
    }

    static func data(_ text: String) -> JinjaValue { .string(text, origin: .data) }

    static func message(_ role: String, _ content: String) -> JinjaValue {
        .dict([("role", data(role)), ("content", data(content))])
    }
}
