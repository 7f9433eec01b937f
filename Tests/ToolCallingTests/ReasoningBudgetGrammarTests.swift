import Engine
import GenerationVocabulary
import Testing

@testable import ToolCalling

/// The reasoning budget around a real tool grammar (Hermes, a named function, reasoning allowed),
/// over a byte vocabulary, with a stand-in model that would think forever: the budget forces
/// `</think>` through the grammar (which accepts every forced byte), and the call the model then
/// writes is whole. Both ways the reasoning opens: written by the model, or by the prompt.
@Suite struct ReasoningBudgetGrammarTests {
    static let end: Int32 = 256
    static let call = "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"

    static func constraint(_ format: any ToolCallFormat, budget: Int) throws -> ReasoningBudget {
        let use = ToolUse(tools: [GrammarCheck.weather, GrammarCheck.time], choice: .function("get_weather"))
        let grammar = try #require(try format.grammar(for: use, reasoning: true))
        let trie = TokenTrie(tokens: (0..<256).map { [UInt8($0)] } + [nil], endOfGeneration: [end])
        let inner = GrammarConstraint(grammar: try CompiledGrammar(grammar), trie: trie, identity: "weather")
        return ReasoningBudget(
            budget: budget, closing: Array("</think>".utf8).map { Int32($0) },
            startsInReasoning: format.startsInReasoning, inner: inner, pieces: { $0 < 256 ? [UInt8($0)] : [] })
    }

    /// The stand-in model's favourite next token after `out`: `<think>` (unless the prompt opened
    /// it), then `x` for as long as the reasoning is open, then the call, then the end.
    static func favourite(_ out: [UInt8], opened: Bool) -> Int32 {
        let text = String(decoding: out, as: UTF8.self)
        let open = opened ? "" : "<think>"
        if !text.hasPrefix(open) { return Int32(Array(open.utf8)[out.count]) }
        guard let close = text.range(of: "</think>") else { return Int32(UInt8(ascii: "x")) }
        let written = text[close.upperBound...].utf8.count
        let call = Array(call.utf8)
        return written < call.count ? Int32(call[written]) : end
    }

    /// Greedy decoding of the stand-in model under `constraint`.
    static func run(_ constraint: ReasoningBudget, opened: Bool) -> (text: String, accepted: Bool, ended: Bool) {
        let p = constraint.makeProcessor()
        var out: [UInt8] = []
        var logits = [Float](repeating: 0, count: 257)
        for _ in 0..<300 {
            let wanted = favourite(out, opened: opened)
            for i in logits.indices { logits[i] = Float(i % 7) * 0.01 }
            logits[Int(wanted)] = 10
            logits.withUnsafeMutableBufferPointer { p.process(logits: $0) }
            let token = Int32(logits.indices.max { logits[$0] < logits[$1] }!)
            guard p.accept(token: token) else { return (String(decoding: out, as: UTF8.self), false, false) }
            if token == end { return (String(decoding: out, as: UTF8.self), true, p.canEnd) }
            out.append(UInt8(token))
        }
        return (String(decoding: out, as: UTF8.self), true, false)
    }

    @Test(arguments: [0, 6])
    func aModelThatThinksOnStillCallsAfterTheBudget(_ budget: Int) throws {
        for opened in [false, true] {
            let format = HermesFormat().startingInReasoning(opened)
            let (text, accepted, ended) = Self.run(try Self.constraint(format, budget: budget), opened: opened)
            let thought = String(repeating: "x", count: budget)
            #expect(text == (opened ? "" : "<think>") + thought + "</think>" + Self.call, "\(text)")
            #expect(accepted && ended, "\(text)")
            let parsed = format.parse(text, final: true)
            #expect(parsed.reasoning ?? "" == thought)
            #expect(parsed.calls.count == 1 && parsed.calls.first?.complete == true, "\(parsed)")
            #expect(parsed.calls.first?.arguments == #"{"city": "Oslo"}"#)
        }
    }
}
