import Engine
import GenerationVocabulary
import StructuredOutput
import Testing

@testable import ToolCalling

/// Compiles tool grammars and checks texts against them with the Engine's matcher.
enum GrammarCheck {
    static func matcher(_ grammar: Grammar) throws -> GrammarMatcher {
        GrammarMatcher(grammar: try CompiledGrammar(grammar))
    }

    static func accepts(_ m: GrammarMatcher, _ text: String) -> Bool {
        m.reset()
        return m.accept(bytes: Array(text.utf8)) && m.canEnd
    }

    static func check(
        _ format: any ToolCallFormat, _ use: ToolUse, reasoning: Bool = false, accepts good: [String],
        rejects bad: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let grammar = try #require(try format.grammar(for: use, reasoning: reasoning), sourceLocation: sourceLocation)
        let m = try matcher(grammar)
        for g in good {
            #expect(accepts(m, g), "\(format.name) should accept \(g.debugDescription)", sourceLocation: sourceLocation)
            // What the grammar lets through parses back to calls the tools have (none under `.none`).
            let calls = format.parse(g, final: true).calls
            if use.choice == .none {
                #expect(calls.isEmpty, "\(g.debugDescription): a call", sourceLocation: sourceLocation)
            }
            if use.choice == .required {
                #expect(!calls.isEmpty, "\(g.debugDescription): no call", sourceLocation: sourceLocation)
            }
            for call in calls {
                #expect(call.complete, "\(g.debugDescription): incomplete call", sourceLocation: sourceLocation)
                #expect(
                    use.tools.contains { $0.name == call.name }, "\(g.debugDescription): unknown name",
                    sourceLocation: sourceLocation)
                #expect(
                    (try? JSONParser.parse(call.arguments))?.objectMembers != nil,
                    "\(g.debugDescription): arguments \(call.arguments) are no JSON object",
                    sourceLocation: sourceLocation)
            }
        }
        for b in bad {
            #expect(
                !accepts(m, b), "\(format.name) should reject \(b.debugDescription)", sourceLocation: sourceLocation)
        }
    }

    static let weather = ToolDefinition(
        name: "get_weather", description: "The weather in a city",
        parameters: #"""
            {"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"],"additionalProperties":false}
            """#)
    static let time = ToolDefinition(name: "get_time", description: "The time now")
}
