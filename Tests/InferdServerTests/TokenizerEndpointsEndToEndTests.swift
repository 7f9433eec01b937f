import Foundation
import TestSupport
import Testing

/// The tokenizer endpoints (#34) with the default model, in vLLM's shapes: `/tokenize` gives
/// llama.cpp's ids for every text of `Tests/Fixtures/reference/tokenize.json` (its tokenizer,
/// control-token spellings as text without special tokens), `/detokenize` gives the text back,
/// a chat's messages tokenize to the prompt a chat request runs (its `prompt_tokens`),
/// `/tokenizer_info` names the special tokens and the template, and bad input names its field.
@Suite(.serialized) struct TokenizerEndpointsEndToEndTests {
    static func post(_ s: RunningServer, _ path: String, _ body: [String: Any]) async throws -> RawResponse {
        let json = jsonString(body)
        return try await offPool { try s.client(timeout: 60).postJSON(path, json) }
    }

    @Test func tokenizeAndDetokenizeAgreeWithLlamaCpp() async throws {
        let url = TestPaths.packageRoot.appendingPathComponent("Tests/Fixtures/reference/tokenize.json")
        let reference = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let cases = try #require(reference["cases"] as? [[String: Any]])
        try await RunningServer.with { s in
            var checked = 0
            for c in cases {
                let text = try #require(c["text"] as? String)
                guard let expected = c["ids_parse_special_false"] as? [Int] else { continue }
                let r = try await Self.post(s, "/tokenize", ["prompt": text, "add_special_tokens": false])
                let tokens = try #require(r.json?["tokens"] as? [Int], "\(r.text)")
                #expect(tokens == expected, "\(c["name"] ?? "?")")
                #expect(r.json?["count"] as? Int == expected.count)
                let back = try await Self.post(s, "/v1/detokenize", ["tokens": tokens])
                #expect(back.json?["prompt"] as? String == text, "\(c["name"] ?? "?"): \(back.text)")
                checked += 1
            }
            #expect(checked >= 5, "cases with ids: \(checked)")
        }
    }

    @Test func messagesTokenizeToTheChatPromptAndInfoNamesTheTokens() async throws {
        try await RunningServer.with { s in
            let messages = [["role": "user", "content": "What is the capital of France?"]]
            let r = try await Self.post(s, "/v1/tokenize", ["messages": messages, "return_token_strs": true])
            let tokens = try #require(r.json?["tokens"] as? [Int], "\(r.text)")
            let strings = try #require(r.json?["token_strs"] as? [String])
            #expect(strings.count == tokens.count && strings.joined().contains("capital of France"))
            #expect((r.json?["max_model_len"] as? Int ?? 0) > 0)
            let chat = try await Self.post(
                s, "/v1/chat/completions",
                ["model": try SharedModel.engine().modelName, "messages": messages, "max_tokens": 1])
            let usage = try #require(chat.json?["usage"] as? [String: Any], "\(chat.text)")
            #expect(usage["prompt_tokens"] as? Int == tokens.count)
            let info = try await offPool { try s.client().request("GET", "/tokenizer_info") }
            let json = try #require(info.json, "\(info.text)")
            #expect(json["eos_token"] as? String == "<|im_end|>" || json["eos_token"] as? String == "<|endoftext|>")
            #expect((json["chat_template"] as? String)?.contains("im_start") == true)
        }
    }

    @Test func badInputNamesItsField() async throws {
        try await RunningServer.with { s in
            let cases: [(String, [String: Any], String)] = [
                ("/tokenize", ["prompt": 3], "prompt"),
                ("/tokenize", [:], "prompt"),
                ("/tokenize", ["prompt": "x", "messages": [["role": "user", "content": "y"]]], "messages"),
                ("/tokenize", ["prompt": "x", "extra": 1], "extra"),
                (
                    "/tokenize", ["messages": [["role": "user", "content": "y"]], "add_generation_prompt": false],
                    "add_generation_prompt"
                ),
                ("/tokenize", ["prompt": "x", "model": "nope"], "model"),
                ("/detokenize", ["tokens": [1, -2]], "tokens[1]"),
                ("/detokenize", ["tokens": [99_999_999]], "tokens[0]"),
                ("/detokenize", [:], "tokens"),
            ]
            for (path, body, param) in cases {
                let r = try await Self.post(s, path, body)
                #expect((400...404).contains(r.status) && r.errorParam == param, "\(body): \(r.text)")
            }
        }
    }
}
