import Engine
import Foundation
import StructuredOutput
import ToolCalling

/// `inferd bench --tools 1,8,32 [--tool-format NAME]`: what a tool-call grammar costs per token
/// with the model's vocabulary, for each number of tools: the grammar's build and compile time,
/// and the mask time per token (median, p99) along random walks of allowed tokens, for
/// `tool_choice` `auto` (free text or calls) and `required` (calls only). The tools are made up
/// alike (each with a string, an enum, an integer range and an optional array of booleans), as
/// agents' tool lists are; the format is the model template's (or `--tool-format`).
enum ToolBench {
    /// Tool `i`: a schema with the kinds of keywords real tool lists use.
    static func tool(_ i: Int) -> ToolDefinition {
        let schema =
            #"{"type":"object","properties":{"query":{"type":"string","maxLength":64},"#
            + #""mode":{"enum":["fast","exact","auto"]},"#
            + #""limit":{"type":"integer","minimum":1,"maximum":100},"flags":{"type":"array","items":{"type":"boolean"},"maxItems":4}},"#
            + #""required":["query","mode"],"additionalProperties":false}"#
        return ToolDefinition(
            name: "tool_\(i)", description: "Tool number \(i).", parameters: schema, strict: true)
    }

    static func run(modelPath: String, counts: [Int], formatName: String?, threads: Int) throws {
        let engine = try InferenceEngine(path: modelPath, threads: threads)
        let format =
            formatName.flatMap(ToolCallFormats.named) ?? ToolCallFormats.detect(templateSource: engine.template?.source)
        let trie = engine.tokenTrie
        let clock = ContinuousClock()
        print("format \(format.name), \(trie.vocabularySize) tokens")
        for count in counts {
            let tools = (0..<count).map(tool)
            for choice in [ToolChoice.auto, .required] {
                let use = ToolUse(tools: tools, choice: choice, parallel: true)
                var buildTimes: [Double] = []
                var compiled: CompiledGrammar?
                for _ in 0..<11 {
                    let start = clock.now
                    guard let grammar = try format.grammar(for: use, reasoning: false) else { break }
                    compiled = try CompiledGrammar(grammar)
                    buildTimes.append(StructuredBench.microseconds(clock.now - start))
                }
                guard let compiled else { continue }
                buildTimes.sort()
                let matcher = GrammarMatcher(grammar: compiled)
                let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
                defer { allowed.deallocate() }
                var times = StructuredBench.randomWalks(
                    trie: trie, start: { matcher.reset() },
                    step: { matcher.fillMask(trie: trie, allowed: allowed) },
                    allows: { id in allowed[id >> 6] >> UInt64(id & 63) & 1 != 0 },
                    accept: { token in _ = matcher.accept(bytes: trie.tokenBytes(token)!) })
                times.sort()
                print(
                    String(
                        format:
                            "%2d tools, %@: build+compile median %.1f ms; mask median %.1f us, p99 %.1f us, max %.1f us (%d masks, %d rules)",
                        count, choice == .auto ? "auto    " : "required",
                        StructuredBench.percentile(buildTimes, 0.5) / 1000,
                        StructuredBench.percentile(times, 0.5), StructuredBench.percentile(times, 0.99),
                        times.last ?? 0,
                        times.count, compiled.ruleCount))
            }
        }
    }
}
