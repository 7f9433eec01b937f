import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import InferdServer

/// The application-level limits: prompt length, max_tokens, JSON nesting. Each refusal is a JSON
/// error and the server keeps serving. (Body, header, connection and timeout limits are tested
/// in HTTPServerTests.)
@Suite struct LimitsTests {
    func post(_ s: RunningServer, _ body: String) async throws -> RawResponse {
        try await offPool { try s.client().postJSON("/v1/generations", body) }
    }

    @Test func promptTokensAndMaxTokensAreCapped() async throws {
        try await RunningServer.with(configure: {
            $0.maxPromptTokens = 40
            $0.maxTokensLimit = 8
        }) { s in
            let long = jsonString(["prompt": String(repeating: "word ", count: 60), "options": ["max_tokens": 1]])
            let tooLong = try await post(s, long)
            #expect(tooLong.status == 400 && tooLong.errorCode == "prompt_too_long")
            #expect((tooLong.json?["error"] as? [String: Any])?["message"] as? String ?? "" != "")
            // A prompt that could never fit the context is told so first, as before the limit existed.
            let huge = try await post(s, jsonString(["prompt": String(repeating: "hello ", count: 9000)]))
            #expect(huge.status == 400 && huge.errorCode == "context_length_exceeded", "\(huge.text)")
            let greedy = jsonString(["prompt": "Hi", "options": ["max_tokens": 9]])
            let tooMany = try await post(s, greedy)
            #expect(tooMany.status == 400 && tooMany.errorCode == "max_tokens_too_large")
            // Still serving; without max_tokens the answer is capped by the limit.
            let fine = try await post(
                s, jsonString(["prompt": "Count from one to fifty.", "options": ["temperature": 0]]))
            #expect(fine.status == 200)
            let usage = try #require(fine.json?["usage"] as? [String: Any])
            #expect((usage["completion_tokens"] as? Int ?? 99) <= 8)
        }
    }

    @Test func deepJSONIsRefusedBeforeDecoding() async throws {
        try await RunningServer.with(configure: { $0.maxJSONDepth = 8 }) { s in
            let deep =
                #"{"prompt": "Hi", "options": {"stop": "#
                + String(repeating: "[", count: 10) + String(repeating: "]", count: 10) + "}}"
            let refused = try await post(s, deep)
            #expect(refused.status == 400 && refused.errorCode == "json_too_deep")
            // A hundred thousand brackets: refused just the same, without recursion.
            let huge =
                #"{"prompt": "#
                + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
            #expect(try await post(s, huge).errorCode == "json_too_deep")
            // Brackets inside strings do not count.
            let quoted = jsonString([
                "prompt": String(repeating: "[{", count: 50), "options": ["max_tokens": 1, "temperature": 0],
            ])
            #expect(try await post(s, quoted).status == 200)
        }
    }

    @Test func defaultsAreSafe() {
        let c = ServerConfiguration()
        #expect(c.maxPromptTokens == 4096 && c.maxTokensLimit == 4096 && c.maxJSONDepth == 32)
        #expect(c.maxBodyBytes == 1 << 20 && c.headerMemoryLimitBytes == 32 << 10)
        #expect(c.connectionLimit == 512 && c.connectionTimeoutSeconds == 30)
    }
}
