import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// Session turns go through the same generation service as stateless requests: counted by the
/// same metrics and logged by the same line, checked against the same limits, and a session's
/// default options never hide a turn's own format.
@Suite(.serialized) struct SessionAccountingEndToEndTests {
    static func createSession(_ s: RunningServer, _ body: [String: Any]) async throws -> String {
        let json = jsonString(body)
        let r = try await offPool { try s.client().postJSON("/v1/sessions", json) }
        #expect(r.status == 201, "\(r.text)")
        return try #require(r.json?["id"] as? String)
    }

    static func turn(_ s: RunningServer, _ id: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client().postJSON("/v1/sessions/\(id)/responses", json) }
    }

    static func generations(_ s: RunningServer, _ reason: String) -> Double {
        s.metrics.value("inferd_generations_total", labels: ["finish_reason": reason]) ?? 0
    }

    /// A native session turn, an OpenAI `session_id` turn and a turn of a conversation each count
    /// once in `inferd_generations_total` and the token counters, with a `generation finished` line.
    @Test func sessionTurnsAreCountedAndLoggedAsGenerations() async throws {
        try await RunningServer.with { s in
            let model = try SharedModel.engine().modelName
            let id = try await Self.createSession(s, ["options": ["temperature": 0]])
            let first = try await Self.turn(
                s, id, ["prompt": "Name a colour.", "options": ["max_tokens": 3, "ignore_eos": true]])
            #expect(first.status == 200, "\(first.text)")
            #expect(Self.generations(s, "length") == 1)
            #expect(s.metrics.value("inferd_completion_tokens_total") == 3)
            let prompt = try #require((first.json?["usage"] as? [String: Any])?["prompt_tokens"] as? Int)
            #expect(s.metrics.value("inferd_prompt_tokens_total") == Double(prompt))
            let firstID = try #require(first.json?["request_id"] as? String)
            #expect(s.logs.matching("generation finished").contains { $0.contains(firstID) })

            let chat = jsonString([
                "model": model, "session_id": id, "max_tokens": 2,
                "messages": [["role": "user", "content": "And another?"]],
            ])
            let viaOpenAI = try await offPool { try s.client().postJSON("/v1/chat/completions", chat) }
            #expect(viaOpenAI.status == 200, "\(viaOpenAI.text)")
            let conversation = try #require(
                try await offPool { try s.client().postJSON("/v1/conversations", "{}") }.json?["id"] as? String)
            let response = jsonString([
                "model": model, "conversation": conversation, "input": "Say hi.", "max_output_tokens": 2,
            ])
            let viaResponses = try await offPool { try s.client().postJSON("/v1/responses", response) }
            #expect(viaResponses.status == 200, "\(viaResponses.text)")
            let counted = ["stop", "length", "cancelled", "error"].map { Self.generations(s, $0) }.reduce(0, +)
            #expect(counted == 3)
            #expect(s.logs.matching("generation finished").count == 3)
            #expect((s.metrics.value("inferd_completion_tokens_total") ?? 0) >= 4)
        }
    }

    /// Without `max_tokens`, a session turn's budget is `default_max_tokens` clamped to
    /// `max_tokens_limit`, as a stateless request's is.
    @Test func aTurnsDefaultBudgetIsClampedToTheLimit() async throws {
        try await RunningServer.with(configure: {
            $0.defaultMaxTokens = 64
            $0.maxTokensLimit = 5
        }) { s in
            let id = try await Self.createSession(s, ["options": ["temperature": 0, "ignore_eos": true]])
            let r = try await Self.turn(s, id, ["prompt": "Count from one to a hundred."])
            #expect(r.status == 200, "\(r.text)")
            #expect((r.json?["usage"] as? [String: Any])?["completion_tokens"] as? Int == 5)
            #expect(r.json?["finish_reason"] as? String == "length")
            // Stateless, the same server answers the same way.
            let stateless = try await offPool {
                try s.client().postJSON(
                    "/v1/generations",
                    jsonString([
                        "prompt": "Count from one to a hundred.", "options": ["temperature": 0, "ignore_eos": true],
                    ]))
            }
            #expect((stateless.json?["usage"] as? [String: Any])?["completion_tokens"] as? Int == 5)
        }
    }

    /// A session created with default options still honours the `format` a turn gives (natively
    /// and through OpenAI's `response_format` with `session_id`): the answer follows the schema.
    @Test func aSessionsDefaultsKeepATurnsFormat() async throws {
        try await RunningServer.with { s in
            let schema: [String: Any] = [
                "type": "object", "properties": ["answer": ["type": "string", "enum": ["yes", "no"]]],
                "required": ["answer"], "additionalProperties": false,
            ]
            let id = try await Self.createSession(s, ["options": ["temperature": 0, "max_tokens": 40]])
            let r = try await Self.turn(
                s, id,
                [
                    "prompt": "Is the sky blue? Answer in one sentence.",
                    "options": ["format": ["type": "json_schema", "schema": schema]],
                ])
            #expect(r.status == 200, "\(r.text)")
            let content = try #require(r.json?["content"] as? String)
            let parsed = try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any]
            #expect(["yes", "no"].contains(parsed?["answer"] as? String), "\(content)")
            #expect(r.json?["partial"] as? Bool == false, "\(r.text)")

            let chat = jsonString([
                "model": try SharedModel.engine().modelName, "session_id": id,
                "messages": [["role": "user", "content": "Is grass green? Answer in one sentence."]],
                "response_format": ["type": "json_schema", "json_schema": ["name": "a", "schema": schema]],
            ])
            let viaOpenAI = try await offPool { try s.client().postJSON("/v1/chat/completions", chat) }
            #expect(viaOpenAI.status == 200, "\(viaOpenAI.text)")
            let message = (viaOpenAI.json?["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any]
            let text = try #require(message?["content"] as? String)
            let answer = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(["yes", "no"].contains(answer?["answer"] as? String), "\(text)")
        }
    }
}
