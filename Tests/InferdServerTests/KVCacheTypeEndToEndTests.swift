import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// `kv_cache_type: q8_0` over real sockets: a generation and a session's turns run on q8_0
/// caches, and later turns reuse what earlier ones left in theirs.
@Suite(.serialized) struct KVCacheTypeEndToEndTests {
    static let engine: Result<InferenceEngine, any Error> = Result {
        try InferenceEngine(path: SharedModel.path, threads: 2, kvCacheType: .q8_0)
    }

    @Test func generationsAndSessionTurnsRunOnAQ8Cache() async throws {
        let engine = try Self.engine.get()
        #expect(engine.model.kvCacheType == .q8_0)
        try await RunningServer.with(state: .ready(engine)) { s in
            let prompt = "What is the capital of France? Answer in one sentence."
            let body = jsonString(["prompt": prompt, "options": ["temperature": 0, "max_tokens": 24]])
            let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
            #expect(r.status == 200, "\(r.text)")
            #expect(r.json?["status"] as? String == "completed")
            let answer = try #require(r.json?["content"] as? String)
            #expect(answer.count > 0)
            // The same request again (single flight shares nothing here: the first has ended):
            // a fresh q8_0 cache gives the same answer.
            let again = try await offPool { try s.client().postJSON("/v1/generations", body) }
            #expect(again.json?["content"] as? String == answer)

            let created = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions", jsonString(["options": ["temperature": 0, "max_tokens": 16]]))
            }
            let id = try #require(created.json?["id"] as? String)
            var cached: [Int] = []
            for question in ["Name a red fruit.", "And a yellow one?", "And a green one?"] {
                let turn = try await offPool {
                    try s.client().postJSON("/v1/sessions/\(id)/responses", jsonString(["prompt": question]))
                }
                #expect(turn.status == 200, "\(turn.text)")
                #expect(turn.json?["status"] as? String == "completed")
                let content = try #require(turn.json?["content"] as? String)
                #expect(content.count > 0)
                let usage = try #require(turn.json?["usage"] as? [String: Any])
                cached.append(usage["cached_tokens"] as? Int ?? -1)
            }
            // Turns 2 and 3 start from the q8_0 cache the earlier turns left.
            #expect(cached[0] == 0 && cached[1] > 0 && cached[2] > cached[1], "\(cached)")
        }
    }
}
