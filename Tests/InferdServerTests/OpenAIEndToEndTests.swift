import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// The OpenAI routes over a real socket with the real model: answers, the exact stream format,
/// errors in OpenAI's shape, and cancellation on disconnect.
@Suite struct OpenAIEndToEndTests {
    func chatBody(_ content: String, _ extra: [String: Any] = [:], model: String? = nil) throws -> String {
        let name = try model ?? SharedModel.engine().modelName
        var body: [String: Any] = [
            "model": name, "messages": [["role": "user", "content": content]],
        ]
        body.merge(extra) { _, b in b }
        return jsonString(body)
    }

    func openAIError(_ r: RawResponse) -> [String: Any] { r.json?["error"] as? [String: Any] ?? [:] }

    @Test func modelsListsTheServedModel() async throws {
        try await RunningServer.with { s in
            let r = try await offPool { try s.client(timeout: 120).request("GET", "/v1/models") }
            #expect(r.status == 200)
            let data = try #require(r.json?["data"] as? [[String: Any]])
            #expect(data.count == 1)
            #expect(data[0]["id"] as? String == (try SharedModel.engine().modelName))
            #expect(data[0]["context_length"] as? Int == 8192)
            #expect(data[0]["architecture"] as? String == "llama")
            #expect(data[0]["weight_types"] as? [String] == ["F32", "Q4_1", "Q8_0"])
            #expect(r.json?["object"] as? String == "list")
        }
    }

    @Test func chatAnswersOnceAsTheNativeEndpointDoes() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("fact_question")
            let body = try chatBody(ref.messages[0].content, ["temperature": 0, "max_tokens": 48])
            let r = try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", body) }
            #expect(r.status == 200)
            let json = try #require(r.json)
            #expect(json["object"] as? String == "chat.completion")
            #expect((json["id"] as? String)?.hasPrefix("chatcmpl-") == true)
            let choice = try #require((json["choices"] as? [[String: Any]])?.first)
            let message = try #require(choice["message"] as? [String: Any])
            #expect(message["role"] as? String == "assistant")
            #expect(message["content"] as? String == ref.generatedText)
            #expect(choice["finish_reason"] as? String == "stop")
            let usage = try #require(json["usage"] as? [String: Any])
            #expect(usage["prompt_tokens"] as? Int == ref.promptIDs.count)
            #expect(usage["completion_tokens"] as? Int == ref.generatedIDs.count)
            // Same metrics and log line as the native API, with the request id.
            #expect(s.metrics.value("inferd_generations_total", labels: ["finish_reason": "stop"]) == 1)
            let id = try #require(r.header("X-Request-Id"))
            #expect(s.logs.matching("generation finished request_id=\(id)").count == 1)
        }
    }

    @Test func streamIsBareDataDeltasThenFinishUsageAndDone() async throws {
        try await RunningServer.with { s in
            let ref = try GreedyCase.named("list_request")
            let body = try chatBody(
                ref.messages[0].content,
                ["temperature": 0, "max_tokens": 48, "stream": true, "stream_options": ["include_usage": true]])
            let (status, reader) = try await offPool { () -> (Int, SSEReader) in
                let c = try s.client(timeout: 120)
                let (status, _) = try c.startStream("/v1/chat/completions", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return (status, reader)
            }
            #expect(status == 200)
            #expect(!reader.text.contains("event:") && !reader.text.contains("\nid:") && !reader.text.hasPrefix("id:"))
            let events = reader.events
            #expect(events.allSatisfy { $0.name.isEmpty && $0.id.isEmpty })
            #expect(events.last?.data == "[DONE]")
            let chunks = events.dropLast().map { jsonObject($0.data) }
            let choices = chunks.map { ($0["choices"] as? [[String: Any]]) ?? [] }
            #expect((choices.first?.first?["delta"] as? [String: Any])?["role"] as? String == "assistant")
            let pieces = choices.dropFirst().compactMap {
                ($0.first?["delta"] as? [String: Any])?["content"] as? String
            }
            #expect(pieces.count >= 5)
            #expect(pieces.joined() == ref.generatedText)
            let finish = choices.compactMap { $0.first?["finish_reason"] as? String }
            #expect(finish == ["stop"])
            #expect(choices.last?.isEmpty == true)
            let usage = try #require(chunks.last?["usage"] as? [String: Any])
            #expect(usage["completion_tokens"] as? Int == ref.generatedIDs.count)
            #expect(chunks.dropLast().allSatisfy { $0["usage"] is NSNull })
        }
    }

    @Test func errorsHaveOpenAIShapeAndCodes() async throws {
        try await RunningServer.with { s in
            func post(_ path: String, _ body: String) async throws -> RawResponse {
                try await offPool { try s.client(timeout: 120).postJSON(path, body) }
            }
            let bad = try await post("/v1/chat/completions", #"{"model": "x", "messages": ["#)
            #expect(bad.status == 400)
            #expect(Set(openAIError(bad).keys) == ["message", "type", "param", "code"])
            #expect(openAIError(bad)["type"] as? String == "invalid_request_error")

            let wrong = try await post("/v1/chat/completions", try chatBody("hi", model: "gpt-4o"))
            #expect(wrong.status == 404)
            #expect(openAIError(wrong)["code"] as? String == "model_not_found")
            #expect(openAIError(wrong)["param"] as? String == "model")

            let overflow = try await post("/v1/chat/completions", try chatBody("hi", ["max_tokens": 9000]))
            #expect(overflow.status == 400)
            #expect(openAIError(overflow)["code"] as? String == "context_length_exceeded")
            let message = openAIError(overflow)["message"] as? String ?? ""
            #expect(message.contains("9000") && message.contains("8192"), "\(message)")

            let refused = try await post("/v1/chat/completions", try chatBody("hi", ["n": 3]))
            #expect(refused.status == 400 && openAIError(refused)["param"] as? String == "n")

            let completion = try await post(
                "/v1/completions",
                jsonString(["model": try SharedModel.engine().modelName, "prompt": "", "max_tokens": 2]))
            #expect(completion.status == 400 && openAIError(completion)["param"] as? String == "prompt")
            let notFound = try await offPool { try s.client(timeout: 120).request("GET", "/v1/models/nope") }
            #expect(notFound.status == 404 && openAIError(notFound)["code"] as? String == "model_not_found")
        }
    }

    @Test func disconnectDuringAStreamCancelsTheGeneration() async throws {
        try await RunningServer.with { s in
            let body = try chatBody(
                "Write a very long essay about the history of the Roman Empire.",
                ["temperature": 0, "max_tokens": 2000, "stream": true, "ignore_eos": true])
            let client = try s.client(timeout: 120)
            let read = try await offPool { () -> Int in
                _ = try client.startStream("/v1/chat/completions", body)
                var reader = SSEReader()
                try client.readEvents(into: &reader) { $0.events.count >= 6 }
                client.close()
                return reader.events.count
            }
            #expect(read >= 6)
            let cancelled = try #require(await s.cancelledGeneration())
            #expect((0...1).contains(cancelled.stepsAfterCancel), "\(cancelled)")
            let text = try await offPool { try s.client(timeout: 120).request("GET", "/metrics").text }
            #expect(text.contains(#"inferd_generations_total{finish_reason="cancelled"} 1"#))
        }
    }

    @Test func completionsStreamTextPieces() async throws {
        try await RunningServer.with { s in
            let model = try SharedModel.engine().modelName
            let plain = try await offPool {
                try s.client(timeout: 120).postJSON(
                    "/v1/completions",
                    jsonString([
                        "model": model, "prompt": "The capital of France is", "temperature": 0, "max_tokens": 12,
                    ]))
            }
            let whole = try #require((plain.json?["choices"] as? [[String: Any]])?.first?["text"] as? String)
            #expect(plain.json?["object"] as? String == "text_completion")
            let body = jsonString([
                "model": model, "prompt": "The capital of France is", "temperature": 0, "max_tokens": 12,
                "stream": true,
            ])
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client(timeout: 120)
                _ = try c.startStream("/v1/completions", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { $0.events.contains { $0.data == "[DONE]" } }
                return reader
            }
            let chunks = reader.events.dropLast().map { jsonObject($0.data) }
            let texts = chunks.compactMap { ($0["choices"] as? [[String: Any]])?.first?["text"] as? String }
            #expect(texts.joined() == whole)
            #expect(chunks.allSatisfy { $0["object"] as? String == "text_completion" && $0["usage"] == nil })
            #expect((chunks.last?["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String == "length")
        }
    }
}
