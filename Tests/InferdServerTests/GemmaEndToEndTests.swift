import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Gemma 3 270M (base model, SentencePiece, Q4_K_M, sliding-window attention) served over every
/// route, as `inferd serve --model gemma-3-270m-q4_k_m.gguf --chat-template gemma` serves it:
/// raw completions against llama.cpp's greedy answers (BOS added as the file asks), two of them
/// at once (batched), native snapshot streams, OpenAI chat, a session whose second turn reuses
/// the first's KV cache, and a disconnect that stops the generation.
@Suite(.serialized) struct GemmaEndToEndTests {
    static let engine: Result<InferenceEngine, any Error> = Result {
        let path = TestPaths.packageRoot.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw ClientError(description: "Gemma 3 missing at \(path): run `make model` (make test does it)")
        }
        return try InferenceEngine(path: path, threads: 2, contextLimit: 4096, chatTemplate: "gemma")
    }

    static func greedyCase(_ name: String) throws -> (prompt: String, text: String, tokens: Int) {
        let url = TestPaths.referenceRoot.appendingPathComponent("gemma3/reference.json")
        let data = try Data(contentsOf: url)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let cases = try #require(root["greedy"] as? [[String: Any]])
        let c = try #require(cases.first { $0["name"] as? String == name })
        return (
            try #require(c["prompt"] as? String), try #require(c["text"] as? String),
            try #require(c["generated_ids"] as? [Int]).count
        )
    }

    func with(_ body: (RunningServer) async throws -> Void) async throws {
        let engine = try Self.engine.get()
        try await RunningServer.with(state: .ready(engine), body)
    }

    func completion(_ s: RunningServer, _ name: String) async throws -> (got: String, expected: String) {
        let ref = try Self.greedyCase(name)
        let model = try Self.engine.get().modelName
        let body = jsonString([
            "model": model, "prompt": ref.prompt, "max_tokens": ref.tokens, "temperature": 0,
        ])
        let r = try await offPool { try s.client(timeout: 300).postJSON("/v1/completions", body) }
        #expect(r.status == 200, "\(r.text)")
        let choices = try #require(r.json?["choices"] as? [[String: Any]])
        return (try #require(choices.first?["text"] as? String), ref.text)
    }

    @Test func completionsGiveLlamaCppsGreedyAnswersAloneAndBatched() async throws {
        try await with { s in
            // The cases the engine matches in full (GemmaReferenceTests; the others part from
            // llama.cpp at float-rounding margins, so they say nothing about the HTTP path).
            let alone = try await completion(s, "list")
            #expect(alone.got == alone.expected)
            // Two at once share the engine's batched passes; each still gets its own answer.
            async let code = completion(s, "code")
            async let list = completion(s, "list")
            let (a, b) = try await (code, list)
            #expect(a.got == a.expected)
            #expect(b.got == b.expected)
            let health = try await offPool { try s.client().request("GET", "/health") }
            #expect(health.json?["architecture"] as? String == "gemma3")
            #expect(health.json?["weight_types"] as? [String] == ["F32", "Q4_K", "Q5_0", "Q6_K", "Q8_0"])
            #expect(health.json?["context_length"] as? Int == 4096)
        }
    }

    @Test func nativeStreamsSnapshotsAndOpenAIChatAnswerThroughTheGemmaTemplate() async throws {
        let engine = try Self.engine.get()
        try await with { s in
            let json = jsonString([
                "prompt": "Name three colours.", "stream": true, "options": ["temperature": 0, "max_tokens": 24],
            ])
            let reader = try await offPool {
                let c = try s.client(timeout: 300)
                let (status, _) = try c.startStream("/v1/generations", json)
                #expect(status == 200)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in r.events.contains { $0.name == "completed" } }
                return reader
            }
            let names = reader.events.map(\.name)
            #expect(names.first == "started" && names.last == "completed", "\(names)")
            let started = jsonObject(reader.events.first?.data ?? "")
            // The prompt went through Gemma's template: <bos><start_of_turn>user\n…<end_of_turn>\n<start_of_turn>model\n
            let expectedPrompt = try engine.promptTokens(for: [ChatMessage(role: .user, content: "Name three colours.")]
            )
            #expect(started["prompt_tokens"] as? Int == expectedPrompt.count)
            #expect(expectedPrompt.first == 2 && expectedPrompt.contains(105) && expectedPrompt.contains(106))
            let snapshots = reader.events.filter { $0.name == "snapshot" }.map {
                jsonObject($0.data)["content"] as? String ?? ""
            }
            #expect(snapshots.count >= 2)
            for (x, y) in zip(snapshots, snapshots.dropFirst()) { #expect(y.hasPrefix(x)) }
            let done = jsonObject(reader.events.last?.data ?? "")
            #expect(done["content"] as? String == snapshots.last)

            let chat = jsonString([
                "model": engine.modelName, "messages": [["role": "user", "content": "Say hello."]],
                "max_tokens": 16, "temperature": 0,
            ])
            let r = try await offPool { try s.client(timeout: 300).postJSON("/v1/chat/completions", chat) }
            #expect(r.status == 200, "\(r.text)")
            let choice = try #require((r.json?["choices"] as? [[String: Any]])?.first)
            let message = try #require(choice["message"] as? [String: Any])
            #expect(!(message["content"] as? String ?? "").isEmpty)
            #expect(["stop", "length"].contains(choice["finish_reason"] as? String ?? ""))
        }
    }

    @Test func aSessionReusesItsCacheAndADisconnectStopsTheGeneration() async throws {
        try await with { s in
            let created = try await offPool {
                try s.client().postJSON("/v1/sessions", jsonString(["options": ["temperature": 0]]))
            }
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? String)
            let first = try await offPool {
                try s.client(timeout: 300).postJSON(
                    "/v1/sessions/\(id)/responses",
                    jsonString(["prompt": "What is the capital of France?", "options": ["max_tokens": 12]]))
            }
            #expect(first.status == 200, "\(first.text)")
            let firstPrompt = try #require((first.json?["usage"] as? [String: Any])?["prompt_tokens"] as? Int)
            let second = try await offPool {
                try s.client(timeout: 300).postJSON(
                    "/v1/sessions/\(id)/responses",
                    jsonString(["prompt": "And of Italy?", "options": ["max_tokens": 12]]))
            }
            #expect(second.status == 200, "\(second.text)")
            let usage = try #require(second.json?["usage"] as? [String: Any])
            #expect((usage["cached_tokens"] as? Int ?? 0) >= firstPrompt, "\(usage)")

            // A long answer, abandoned after its first snapshot.
            let before = s.cancelledGenerations()
            let json = jsonString([
                "prompt": "Write a long story.", "stream": true,
                "options": ["temperature": 0, "max_tokens": 2000, "ignore_eos": true],
            ])
            try await offPool {
                let c = try s.client(timeout: 300)
                _ = try c.startStream("/v1/generations", json)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in r.events.contains { $0.name == "snapshot" } }
                c.close()
            }
            #expect(await eventually(timeout: .seconds(30)) { s.cancelledGenerations() == before + 1 })
            #expect(await eventually(timeout: .seconds(30)) { (s.app.host.backend?.activeGenerations ?? 1) == 0 })
        }
    }
}
