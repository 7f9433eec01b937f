import GenerationVocabulary
import Testing

@testable import ToolCalling

@Suite struct GrammarTests {
    typealias G = GrammarCheck
    let tools = [GrammarCheck.weather, GrammarCheck.time]

    @Test func hermesAutoAcceptsTextOrCallsAndRefusesWrongOnes() throws {
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
        let time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"
        try G.check(
            HermesFormat(), ToolUse(tools: tools),
            accepts: ["Hello!", "", call, "Sure. " + call, call + "\n" + time + "\n", "a < b <tool_ x"],
            rejects: [
                "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>",
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 5}}\n</tool_call>",
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"unit\": \"k\"}}\n</tool_call>",
                call + " and text after",
                "text <tool_call> not a call",
            ])
        try G.check(
            HermesFormat(), ToolUse(tools: tools, parallel: false), accepts: [call, "Text " + time],
            rejects: [call + "\n" + time])
    }

    @Test func requiredNamedAndNone() throws {
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
        let time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"any\": [1]}}\n</tool_call>"
        try G.check(
            HermesFormat(), ToolUse(tools: tools, choice: .required), accepts: [call, time, call + "\n" + time],
            rejects: ["Hello", "", "Hi " + call])
        try G.check(
            HermesFormat(), ToolUse(tools: tools, choice: .function("get_time")), accepts: [time],
            rejects: [call, time + "\n" + time, "x"])
        try G.check(
            HermesFormat(), ToolUse(tools: tools, choice: .none), accepts: ["Just text <tool_ <b>", ""],
            rejects: [call, "a" + time])
        #expect(throws: ToolGrammarError.unknownTool("nope")) {
            try HermesFormat().grammar(for: ToolUse(tools: tools, choice: .function("nope")), reasoning: false)
        }
        #expect(throws: ToolGrammarError.noTools) {
            try HermesFormat().grammar(for: ToolUse(tools: [], choice: .required), reasoning: false)
        }
        // No tools and no call required: nothing to constrain.
        #expect(try HermesFormat().grammar(for: ToolUse(tools: []), reasoning: false) == nil)
        #expect(try HermesFormat().grammar(for: ToolUse(tools: [], choice: .none), reasoning: true) == nil)
    }

    @Test func reasoning() throws {
        let call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"
        try G.check(
            HermesFormat(), ToolUse(tools: tools, choice: .required), reasoning: true,
            accepts: ["<think>\nWhat time?\n</think>\n\n" + call, call],
            rejects: ["<think>\n" + call + "</think>\n" + call, "<think>a</think>\nno call"])
        try G.check(
            HermesFormat(startsInReasoning: true), ToolUse(tools: tools), reasoning: false,
            accepts: ["hmm</think>\n\nHello", "</think>" + call],
            rejects: ["Hello", "hmm</think>\n\nHi <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}"])
    }

    @Test func strictSchemasThatCannotBeEnforcedAreRefused() throws {
        let odd = ToolDefinition(
            name: "odd", parameters: #"{"type":"object","properties":{"n":{"type":"integer","multipleOf":2}}}"#,
            strict: true)
        #expect(throws: ToolGrammarError.unenforceable(tool: "odd", keyword: "multipleOf", path: "$.properties.n")) {
            try HermesFormat().grammar(for: ToolUse(tools: [odd]), reasoning: false)
        }
        var loose = odd
        loose.strict = false
        // Not strict: any JSON object.
        try G.check(
            HermesFormat(), ToolUse(tools: [loose], choice: .required),
            accepts: ["<tool_call>\n{\"name\": \"odd\", \"arguments\": {\"n\": 3, \"m\": \"x\"}}\n</tool_call>"],
            rejects: ["<tool_call>\n{\"name\": \"odd\", \"arguments\": [3]}\n</tool_call>"])
    }

    @Test func llama3Grammar() throws {
        let call = #"{"name": "get_weather", "parameters": {"city": "Rome", "unit": "c"}}"#
        let time = #"{"name": "get_time", "parameters": {}}"#
        try G.check(
            Llama3JSONFormat(), ToolUse(tools: tools),
            accepts: [call, call + "; " + time, "Hi there", "Text first\n" + time, "a {b} c"],
            rejects: [
                #"{"name": "get_weather", "parameters": {"unit": "c"}}"#, "{\"x\": 1}", "Text\n{\"x\": 1}",
                "Text <|python_tag|>" + time, " " + time,
            ])
        // Mid-line JSON is text to the parser as to the grammar.
        #expect(Llama3JSONFormat().parse("Text " + time, final: true).calls.isEmpty)
        try G.check(
            Llama3JSONFormat(), ToolUse(tools: tools, parallel: false), accepts: [call], rejects: [call + "; " + time])
        try G.check(
            Llama3JSONFormat(), ToolUse(tools: tools), reasoning: true,
            accepts: ["<think>\nPlan.\n</think>\n\n" + call, "<think>Plan.</think>Answer"],
            rejects: ["<think>\n" + time + "\n</think>", "<think>\n\n{\"x\": 1}</think>", "<think>\nA\n{</think>"])
    }

    @Test func genericGrammar() throws {
        let call = #"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}]}"#
        let two = #"{"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]}"#
        try G.check(
            GenericFormat(), ToolUse(tools: tools), accepts: [call, two, "Plain answer.", "Text\n" + call],
            rejects: [#"{"tool_calls": [{"name": "nope", "arguments": {}}]}"#, #"{"response": "x"}"#, "{}"])
        try G.check(
            GenericFormat(), ToolUse(tools: tools, choice: .required, parallel: false), accepts: [call],
            rejects: [two, "Plain answer."])
        try G.check(
            GenericFormat(), ToolUse(tools: tools, choice: .none), accepts: ["Text", "```json\n[1]\n```"],
            rejects: [call, "Text\n```json\n" + call + "\n```", "```json\n" + call])
    }

    @Test func pythonicGrammar() throws {
        try G.check(
            PythonicFormat(), ToolUse(tools: tools),
            accepts: [
                #"[get_weather(city="Paris", unit='c')]"#, "[get_time(), get_weather(city=\"X\")]", "Hello [1]",
                "Text\n[get_time()]",
            ],
            rejects: [
                "[get_date()]", #"[get_weather(town="Paris")]"#, "[get_time()] trailing", "[get_time(]",
                #"[get_weather(city="\xZ")]"#,
            ])
        try G.check(
            PythonicFormat(), ToolUse(tools: tools, choice: .required),
            accepts: [#"[get_weather(city="caf\xe9 \u00e9 \"q\" \\", unit='c')]"#, "[get_time(a=[1, {'b': None}])]"],
            rejects: ["Hello"])
        #expect(throws: ToolGrammarError.self) {
            try PythonicFormat().grammar(
                for: ToolUse(tools: [ToolDefinition(name: "s", parameters: "{}", strict: true)]), reasoning: false)
        }
    }

    @Test func textWithoutAWordIsExactlyTheTextsWithoutIt() throws {
        var rules: [String: GrammarExpression] = [:]
        let start = TextExclusion.add(avoiding: ["abab", "</x>"], prefix: "t", to: &rules)
        let m = try G.matcher(Grammar(root: start, rules: rules))
        let alphabet = ["a", "b", "<", "/", "x", ">", "é"]
        // Every string of up to 5 characters over the alphabet: accepted iff it has no word.
        var strings = [""]
        for _ in 0..<5 { strings += strings.flatMap { s in alphabet.map { s + $0 } }.filter { $0.count <= 5 } }
        for s in Set(strings) {
            let bad = s.contains("abab") || s.contains("</x>")
            #expect(G.accepts(m, s) == !bad, "\(s)")
        }
    }
}
