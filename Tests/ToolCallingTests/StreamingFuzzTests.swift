import Testing

@testable import ToolCalling

/// The streaming rules hold for any text, not only well-formed answers: random strings made of
/// the formats' markup pieces, checked over every prefix for every format.
@Suite struct StreamingFuzzTests {
    static let pieces = [
        "<tool_call>", "</tool_call>", "<tool_", "<think>", "</think>", "</thi", "<|python_tag|>", "{", "}", "[", "]",
        "(", ")", "\"", "'", "\\", ":", ",", ";", "=", " ", "\n", "\"name\"", "\"arguments\"", "\"parameters\"",
        "\"tool_calls\"", "\"f\"", "f", "x=", "True", "None", "1", "-2.5", "é", "🌍", "text", "\\u00e9", "```",
        "```json\n", "`",
    ]

    /// A small fixed-seed generator (SplitMix64), so failures repeat.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: ToolCallFormats.names)
    func randomMarkupKeepsTheStreamingRules(_ name: String) throws {
        let format = try #require(ToolCallFormats.named(name))
        var rng = Generator(state: 33)
        for i in 0..<150 {
            let count = Int.random(in: 1...24, using: &rng)
            let text = (0..<count).map { _ in Self.pieces.randomElement(using: &rng)! }.joined()
            StreamCheck.check(i % 3 == 0 ? format.startingInReasoning(true) : format, text, markupFree: false)
        }
    }

    /// Well-formed calls glued to random text keep the rules too.
    @Test(arguments: ToolCallFormats.names)
    func callsAmongRandomTextKeepTheStreamingRules(_ name: String) throws {
        let format = try #require(ToolCallFormats.named(name))
        let call =
            switch name {
            case "hermes": "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\\\"y\"}}\n</tool_call>"
            case "llama3_json": "{\"name\": \"f\", \"parameters\": {\"a\": [1, {\"b\": 2}]}}"
            case "pythonic": "[f(a='x\\'y', b=[1, (2, None)]), g()]"
            default: "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": 1}}]}"
            }
        var rng = Generator(state: 7)
        for _ in 0..<60 {
            var parts: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                parts.append(Bool.random(using: &rng) ? call : Self.pieces.randomElement(using: &rng)!)
                if Bool.random(using: &rng) { parts.append("\n") }
            }
            StreamCheck.check(format, parts.joined(), markupFree: false)
        }
    }
}
