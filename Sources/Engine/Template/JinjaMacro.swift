/// A `{% macro name(parameters) %}` definition.
final class JinjaMacro {
    let name: String
    let parameters: [(name: String, defaultValue: JinjaExpression?)]
    let body: [JinjaNode]

    init(name: String, parameters: [(name: String, defaultValue: JinjaExpression?)], body: [JinjaNode]) {
        self.name = name
        self.parameters = parameters
        self.body = body
    }
}
