import Engine
import Foundation
import Testing

@testable import StructuredOutput

/// The schema corpus in `Tests/Fixtures/schemas/` (function-call arguments, API payloads,
/// Kubernetes objects, CI workflows, JSON-LD documents, recursive ones): each is compiled or
/// refused naming the keyword; each compiled one's masks equal the brute-force reference along
/// a random walk, and the default model's greedy answer under it validates (`SchemaValidator`).
@Suite(.serialized) struct SchemaCorpusTests {
    /// The schemas that use a keyword inferd does not implement, and that keyword.
    /// `api-product.json`'s `uniqueItems` is over free strings (kept distinct only over a finite
    /// set of scalars). `api-attachment.json` (`format: byte`) and `feature-flags.json` (`not:
    /// {required: [...]}`) compile since #33.
    static let refused: [String: String] = [
        "api-invoice-line.json": "multipleOf",
        "api-product.json": "uniqueItems",
        "ci-matrix.json": "patternProperties",
    ]

    /// How every schema's answer is decoded: greedy, with OpenAI's presence and frequency
    /// penalties. Under plain greedy decoding the 135M model repeats itself inside what a schema
    /// leaves unbounded, and three schemas ran until `max_tokens` (`strict-ui-component.json`: 3
    /// children at every level of its recursion; `json-patch.json`: `"type"` written into an
    /// array without end; `api-geojson-feature.json`: `1.0.0/1.0.0/…` in a string without
    /// `maxLength`). A penalty is what users of small models set; with this one all 32 compiled
    /// schemas finish and validate (2026-12-02; the README's Structured output section has the
    /// settings tried, `scripts/corpus-penalties.py` runs them). The same in
    /// `Tests/compat/test_structured_corpus.py`.
    static let sampling: SamplingOptions = {
        var o = SamplingOptions.greedy
        o.presencePenalty = 0.5
        o.frequencyPenalty = 0.4
        return o
    }()

    /// The compiled schemas whose greedy answer finishes but repeats a key (the test fails when
    /// one stops repeating, so this list only shrinks). Emptied since keys are kept distinct
    /// within an object (`api-geojson-feature.json` and `k8s-configmap.json` repeated extra keys).
    static let duplicateExtraKeys: Set<String> = []

    /// The token budget of each greedy answer: room to spare over the longest finished answer.
    static let maxTokens = 600
    /// `large.json` has 40 properties: its finished answer is longer than the others.
    static let maxTokensOf: [String: Int] = ["large.json": 1200]

    static let directory = SchemaCheck.packageRoot.appendingPathComponent("Tests/Fixtures/schemas")

    static func corpus() throws -> [(name: String, schema: JSONValue)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            return (name, try JSONParser.parse(text))
        }
    }

    static func compiled() throws -> [(name: String, schema: JSONValue, grammar: CompiledGrammar)] {
        try corpus().compactMap { entry in
            (try? StructuredFormat.jsonSchema(entry.schema).compiledGrammar()).map { (entry.name, entry.schema, $0) }
        }
    }

    @Test func everySchemaCompilesOrIsRefusedNamingItsKeyword() throws {
        let corpus = try Self.corpus()
        #expect(corpus.count >= 25)
        var accepted = 0
        for (name, schema) in corpus {
            do {
                _ = try StructuredFormat.jsonSchema(schema).compiledGrammar()
                accepted += 1
                #expect(Self.refused[name] == nil, "\(name) was expected to be refused")
            } catch .unsupportedKeyword(let keyword, let path) {
                #expect(Self.refused[name] == keyword, "\(name): refused for '\(keyword)' at \(path)")
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
        #expect(accepted == corpus.count - Self.refused.count)
        print(
            "schema corpus: \(accepted) of \(corpus.count) compiled, refused: \(Self.refused.sorted { $0.key < $1.key })"
        )
    }

    @Test func masksEqualBruteForceAlongAWalkOfEverySchema() throws {
        let tokenizer = try SchemaCheck.tokenizer.get()
        let eog = tokenizer.endOfGenerationIDs
        let trie = TokenTrie(tokenizer: tokenizer, endOfGeneration: eog)
        let tokens: [[UInt8]?] = (0..<Int32(trie.vocabularySize)).map { trie.tokenBytes($0).map(Array.init) }
        let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
        defer { allowed.deallocate() }
        var rng = SeededGenerator(seed: 21)
        for (name, _, grammar) in try Self.compiled() {
            let m = GrammarMatcher(grammar: grammar)
            for _ in 0..<8 {
                m.fillMask(trie: trie, allowed: allowed)
                let fast = (0..<trie.vocabularySize).filter { allowed[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }
                    .map(Int32.init)
                let slow = m.bruteForceMask(tokens: tokens, endOfGeneration: eog).sorted()
                #expect(fast == slow, "\(name)")
                let choices = fast.filter { !eog.contains($0) }
                guard fast == slow, !choices.isEmpty else { break }
                #expect(m.accept(bytes: tokens[Int(choices[Int(rng.next() % UInt64(choices.count))])]!))
            }
        }
    }

    /// Every compiled schema's greedy answer from the default model (with the penalties of
    /// `sampling`) ends where the grammar allows (`finish_reason` stop, within `max_tokens`) and
    /// validates. Before the bounds of `StructuredBounds` 13 of 32 ran away inside what their
    /// schema leaves unbounded (an integer's digits, a time's fraction of a second, hostname
    /// labels, invented keys); with the bounds and plain greedy decoding, 3.
    @Test func greedyAnswersOfTheDefaultModelFinishAndValidate() async throws {
        let path = SchemaCheck.packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
        let engine = try InferenceEngine(path: path, threads: 2)
        defer { engine.shutdown() }
        var valid: [String] = []
        var longest = 0
        let corpus = try Self.compiled()
        for (name, schema, grammar) in corpus {
            let question =
                "Produce one realistic example, as JSON, of this JSON Schema: \(schema.compactText.prefix(600))"
            var request = GenerationRequest(
                promptTokens: try engine.promptTokens(for: [ChatMessage(role: .user, content: question)]),
                maxTokens: Self.maxTokensOf[name] ?? Self.maxTokens, sampling: Self.sampling)
            request.constraint = engine.constraint(compiled: grammar, identity: "corpus:" + name)
            let result = try await engine.generate(request)
            longest = max(longest, result.tokens.count)
            guard result.finishReason == .stop else {
                Issue.record(
                    "\(name): \(result.finishReason) after \(result.tokens.count) tokens: …\(result.content.suffix(200))"
                )
                continue
            }
            #expect(result.constraintSatisfied == true, "\(name)")
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(result.content.utf8), options: .fragmentsAllowed)) != nil,
                "\(name): Foundation cannot parse \(result.content)")
            let value = try JSONParser.parse(result.content)
            let errors = SchemaValidator(root: schema).errors(value, schema)
            if Self.duplicateExtraKeys.contains(name) {
                #expect(!errors.isEmpty, "\(name) no longer repeats a key: remove it from `duplicateExtraKeys`")
                #expect(errors.allSatisfy { $0.contains("duplicate key") }, "\(name): \(errors)")
                print("schema corpus: \(name) repeats extra keys: \(errors.prefix(3))")
                continue
            }
            #expect(errors.isEmpty, "\(name): \(errors) in \(result.content)")
            if errors.isEmpty { valid.append(name) }
        }
        print(
            "schema corpus: \(valid.count) of \(corpus.count) greedy answers finished and validate; longest \(longest) tokens"
        )
        #expect(valid.count == corpus.count - Self.duplicateExtraKeys.count)
    }

    /// The validator itself rejects what each keyword forbids (so a passing answer means something).
    @Test func theValidatorRejectsViolations() throws {
        let schema = try JSONParser.parse(
            #"""
            {"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5},
             "s":{"type":"string","maxLength":3,"pattern":"^[a-z]+$"},"e":{"enum":["x","y"]},
             "d":{"type":"string","format":"date-time"},"a":{"type":"array","items":{"type":"boolean"},"maxItems":1},
             "o":{"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]},"r":{"$ref":"#/properties/n"}},
             "required":["n"],"additionalProperties":false}
            """#)
        let v = SchemaValidator(root: schema)
        #expect(
            v.errors(
                try JSONParser.parse(#"{"n":3,"s":"ab","e":"x","d":"2024-02-29T10:00:00Z","a":[true],"o":-2,"r":5}"#),
                schema
            ).isEmpty)
        for bad in [
            #"{}"#, #"{"n":0}"#, #"{"n":2.5}"#, #"{"n":1,"s":"abcd"}"#, #"{"n":1,"s":"A"}"#, #"{"n":1,"e":"z"}"#,
            #"{"n":1,"d":"2024-13-01T00:00:00Z"}"#, #"{"n":1,"a":[true,false]}"#, #"{"n":1,"a":[1]}"#,
            #"{"n":1,"o":3}"#, #"{"n":1,"r":9}"#, #"{"n":1,"x":1}"#, #"[]"#,
        ] {
            #expect(!v.errors(try JSONParser.parse(bad), schema).isEmpty, "\(bad)")
        }
    }
}
