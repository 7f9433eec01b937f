import Foundation
import GenerationVocabulary
import Testing

@testable import Engine
@testable import ToolCalling

/// The engine's mask for tool grammars equals brute force over the default model's whole
/// vocabulary, along short random walks from the start and from inside a call (free text avoiding
/// markup, names, schema'd arguments, Python literals). Brute force is slow in debug: few steps.
@Suite struct ToolMaskTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func maskEqualsBruteForceOnTheDefaultVocabulary() throws {
        let path = Self.packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
        let tokenizer = try Tokenizer(gguf: GGUFFile(path: path))
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        let tools = [GrammarCheck.weather, GrammarCheck.time]
        let cases: [(any ToolCallFormat, ToolUse, String)] = [
            (HermesFormat(), ToolUse(tools: tools), "Sure <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\""),
            (Llama3JSONFormat(), ToolUse(tools: tools, choice: .required), "{\"name\": \"get_"),
            (GenericFormat(), ToolUse(tools: tools, choice: .none), "Hello\n"),
            (PythonicFormat(), ToolUse(tools: tools), "[get_weather(city='"),
        ]
        var rng = SeededGenerator(seed: 33)
        for (format, use, start) in cases {
            let grammar = try #require(try format.grammar(for: use, reasoning: true))
            let m = GrammarMatcher(grammar: try CompiledGrammar(grammar))
            for walk in 0..<2 {
                m.reset()
                if walk == 1 { #expect(m.accept(bytes: Array(start.utf8)), "\(format.name): \(start)") }
                for _ in 0..<3 {
                    m.fillMask(trie: trie, allowed: allowed)
                    let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }
                        .map(Int32.init)
                    let slow = m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted()
                    #expect(fast == slow, "\(format.name)")
                    let choices = fast.filter { !eog.contains($0) }
                    guard fast == slow, !choices.isEmpty else { break }
                    #expect(m.accept(bytes: tokens[Int(choices[Int(rng.next() % UInt64(choices.count))])]!))
                }
            }
        }
    }

    /// A tool like the bench's (`inferd bench --tools`): a bounded string, an enum, an integer
    /// range and an optional array of booleans.
    static func benchTool(_ i: Int) -> ToolDefinition {
        ToolDefinition(
            name: "tool_\(i)", description: "Tool number \(i).",
            parameters: #"{"type":"object","properties":{"query":{"type":"string","maxLength":64},"#
                + #""mode":{"enum":["fast","exact","auto"]},"limit":{"type":"integer","minimum":1,"maximum":100},"#
                + #""flags":{"type":"array","items":{"type":"boolean"},"maxItems":4}},"#
                + #""required":["query","mode"],"additionalProperties":false}"#, strict: true)
    }

    /// The fast paths the bench's tool grammars take (transition rows filled with the rejected
    /// bytes when a state is made, the counted walk through buffer pointers) against the plain
    /// references: every known transition equals a fresh closure, every mask brute force, along
    /// random walks deep into calls to many tools (`required`, parallel) in `hermes` and `generic`.
    @Test func manyToolsMasksAndTransitionsEqualTheReferences() throws {
        let path = Self.packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
        let tokenizer = try Tokenizer(gguf: GGUFFile(path: path))
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        let use = ToolUse(tools: (0..<12).map(Self.benchTool), choice: .required, parallel: true)
        var rng = SeededGenerator(seed: 34)
        for format in [HermesFormat(), GenericFormat()] as [any ToolCallFormat] {
            let m = GrammarMatcher(
                grammar: try CompiledGrammar(try #require(try format.grammar(for: use, reasoning: false))))
            for _ in 0..<3 {
                m.reset()
                for _ in 0..<14 {
                    m.fillMask(trie: trie, allowed: allowed)
                    let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }
                        .map(Int32.init)
                    let slow = m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted()
                    #expect(fast == slow, "\(format.name)")
                    let choices = fast.filter { !eog.contains($0) }
                    guard fast == slow, !choices.isEmpty else { break }
                    #expect(m.accept(bytes: tokens[Int(choices[Int(rng.next() % UInt64(choices.count))])]!))
                }
            }
            // Every transition known so far (filled at the state's making or computed) is what a
            // fresh closure over the state's stacks gives.
            let known = m.stateAccepting.count
            var checked = 0
            for s in 0..<Int32(known) {
                for b in 0...255 {
                    let kept = m.transitions[Int(s) * 256 + b]
                    guard kept != -2 else { continue }
                    #expect(m.computeStep(s, UInt8(b)) == kept, "\(format.name): state \(s), byte \(b)")
                    checked += 1
                }
            }
            #expect(checked > known * 200, "\(format.name): \(checked) transitions of \(known) states")
        }
    }
}
