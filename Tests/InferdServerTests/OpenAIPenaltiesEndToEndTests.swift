import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// OpenAI's `frequency_penalty` and `presence_penalty` over a real socket with the real model:
/// a greedy answer that repeats itself changes under a penalty, and a penalty of 0 changes
/// nothing, token for token.
@Suite struct OpenAIPenaltiesEndToEndTests {
    /// The default model's greedy poem repeats one line ("Abe a sea of dreams,") five times in
    /// 80 tokens; with `frequency_penalty` 0.5 no line comes back more than twice.
    static let prompt = "Write a poem about the sea."

    func chat(_ s: RunningServer, _ extra: [String: Any]) async throws -> (content: String, tokens: Int) {
        var body: [String: Any] = [
            "model": try SharedModel.engine().modelName, "messages": [["role": "user", "content": Self.prompt]],
            "temperature": 0, "max_tokens": 80,
        ]
        body.merge(extra) { _, b in b }
        let text = jsonString(body)
        let r = try await offPool { try s.client(timeout: 120).postJSON("/v1/chat/completions", text) }
        #expect(r.status == 200, "\(r.text)")
        let choice = try #require((r.json?["choices"] as? [[String: Any]])?.first, "\(r.text)")
        let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
        let tokens = try #require((r.json?["usage"] as? [String: Any])?["completion_tokens"] as? Int)
        return (content, tokens)
    }

    /// How often the most repeated non-empty line occurs.
    func mostRepeatedLine(_ text: String) -> Int {
        var counts: [Substring: Int] = [:]
        for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            counts[line, default: 0] += 1
        }
        return counts.values.max() ?? 0
    }

    @Test func aFrequencyPenaltyChangesARepeatingGreedyAnswerAndZeroChangesNothing() async throws {
        try await RunningServer.with { s in
            let plain = try await chat(s, [:])
            // The premise: plain greedy decoding repeats a line.
            #expect(mostRepeatedLine(plain.content) >= 3, "\(plain.content)")
            let zero = try await chat(s, ["frequency_penalty": 0, "presence_penalty": 0.0])
            #expect(zero.content == plain.content && zero.tokens == plain.tokens)
            let frequency = try await chat(s, ["frequency_penalty": 0.5])
            #expect(frequency.content != plain.content)
            #expect(
                mostRepeatedLine(frequency.content) < mostRepeatedLine(plain.content),
                "\(plain.content)\n---\n\(frequency.content)")
            let presence = try await chat(s, ["presence_penalty": 0.5])
            #expect(presence.content != plain.content)
        }
    }
}
