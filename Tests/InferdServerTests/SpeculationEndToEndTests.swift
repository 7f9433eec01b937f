import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// `speculative_lookup` over real sockets: every route answers what the same server without
/// speculation answers, text for text and token for token (greedy, seeded sampling, a JSON
/// schema, a session's turns), and the drafts were really checked (the metrics moved).
@Suite(.serialized) struct SpeculationEndToEndTests {
    static let speculative: Result<InferenceEngine, any Error> = Result {
        try InferenceEngine(path: SharedModel.path, threads: 2, metrics: metrics, speculativeLookup: 6)
    }
    static let metrics = Metrics()

    /// The requests, each a route and a body; prompts an answer repeats from (lists, quoting)
    /// so that drafts are accepted, and one it does not.
    func requests(model: String) -> [(path: String, body: [String: Any])] {
        let schema: [String: Any] = [
            "type": "object",
            "properties": [
                "fruits": [
                    "type": "array", "minItems": 3, "maxItems": 3,
                    "items": [
                        "type": "object",
                        "properties": [
                            "name": ["type": "string", "maxLength": 10], "color": ["type": "string", "maxLength": 10],
                        ],
                        "required": ["name", "color"], "additionalProperties": false,
                    ],
                ]
            ],
            "required": ["fruits"], "additionalProperties": false,
        ]
        let count = "Repeat after me: one, two, three, one, two, three, one, two, three."
        var seeded: [String: Any] = ["temperature": 0.8, "seed": 11, "presence_penalty": 0.4]
        seeded["max_tokens"] = 40
        return [
            (
                "/v1/chat/completions",
                ["model": model, "messages": [["role": "user", "content": count]], "max_tokens": 40, "temperature": 0]
            ),
            (
                "/v1/chat/completions",
                [
                    "model": model, "messages": [["role": "user", "content": count]], "logprobs": true,
                    "top_logprobs": 2,
                ].merging(seeded) { a, _ in a }
            ),
            (
                "/v1/chat/completions",
                [
                    "model": model, "messages": [["role": "user", "content": "Name three fruits and their colors."]],
                    "max_tokens": 80, "temperature": 0,
                    "response_format": ["type": "json_schema", "json_schema": ["name": "fruits", "schema": schema]],
                ]
            ),
            (
                "/v1/completions",
                [
                    "model": model, "prompt": "a, b, c, a, b, c, a, b, c, a,", "max_tokens": 32, "temperature": 0,
                    "logprobs": 1,
                ]
            ),
            (
                "/v1/responses",
                ["model": model, "input": "Write a haiku about the sea.", "max_output_tokens": 40, "temperature": 0]
            ),
            ("/v1/generations", ["prompt": count, "options": ["temperature": 0, "max_tokens": 40]]),
        ]
    }

    /// The answer's text and, where the route gives them, its token entries.
    func answer(_ r: RawResponse) -> String {
        guard let json = r.json else { return r.text }
        var parts: [Any] = []
        if let choices = json["choices"] as? [[String: Any]] {
            for c in choices {
                parts.append((c["message"] as? [String: Any])?["content"] ?? c["text"] ?? "")
                parts.append(c["logprobs"] ?? "")
            }
        }
        for item in json["output"] as? [[String: Any]] ?? [] {
            for content in item["content"] as? [[String: Any]] ?? [] { parts.append(content["text"] ?? "") }
        }
        if let content = json["content"] { parts.append(content) }
        return jsonString(["parts": parts])
    }

    @Test func everyRouteAnswersAsWithoutSpeculation() async throws {
        let plain = try SharedModel.engine()
        let speculative = try Self.speculative.get()
        let bodies = requests(model: plain.modelName)
        var expected: [String] = []
        try await RunningServer.with(state: .ready(plain)) { s in
            for (path, body) in bodies {
                let text = jsonString(body)
                let r = try await offPool { try s.client(timeout: 120).postJSON(path, text) }
                #expect(r.status == 200, "\(path): \(r.text)")
                expected.append(answer(r))
            }
        }
        let before = Self.metrics.value("inferd_speculative_accepted_tokens_total") ?? 0
        try await RunningServer.with(state: .ready(speculative)) { s in
            for ((path, body), want) in zip(bodies, expected) {
                let text = jsonString(body)
                let r = try await offPool { try s.client(timeout: 120).postJSON(path, text) }
                #expect(r.status == 200, "\(path): \(r.text)")
                #expect(answer(r) == want, "\(path) \(body["messages"] ?? body["prompt"] ?? body["input"] ?? "")")
            }
            // A session's turns (its kept cache truncated after rejected drafts) too.
            let created = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions", jsonString(["options": ["temperature": 0, "max_tokens": 24]]))
            }
            let id = try #require(created.json?["id"] as? String)
            var turns: [String] = []
            for question in ["Count from one to ten.", "Again, but backwards.", "Again, forwards."] {
                let turn = try await offPool {
                    try s.client().postJSON("/v1/sessions/\(id)/responses", jsonString(["prompt": question]))
                }
                #expect(turn.status == 200, "\(turn.text)")
                turns.append(turn.json?["content"] as? String ?? "")
            }
            expected = turns
        }
        let accepted = (Self.metrics.value("inferd_speculative_accepted_tokens_total") ?? 0) - before
        #expect(accepted > 0, "no drafted token was accepted: the comparison shows nothing")
        // The same session on the plain server.
        try await RunningServer.with(state: .ready(plain)) { s in
            let created = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions", jsonString(["options": ["temperature": 0, "max_tokens": 24]]))
            }
            let id = try #require(created.json?["id"] as? String)
            for (question, want) in zip(
                ["Count from one to ten.", "Again, but backwards.", "Again, forwards."], expected)
            {
                let turn = try await offPool {
                    try s.client().postJSON("/v1/sessions/\(id)/responses", jsonString(["prompt": question]))
                }
                #expect(turn.json?["content"] as? String == want)
            }
        }
    }
}
