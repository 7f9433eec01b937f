import Foundation
import Testing

@testable import InferdServer

/// Reading OpenAI request bodies, the parameter policy and snapshot-to-delta conversion, without
/// a model or a socket.
@Suite struct OpenAIRequestTests {
    func fields(_ json: String) throws -> OpenAIFields {
        OpenAIFields(try JSONDecoder().decode([String: OpenAIJSON].self, from: Data(json.utf8)))
    }

    /// The OpenAIError `body` throws, nil when it succeeds (any other error is a test failure).
    func error(_ body: () throws -> Void) -> OpenAIError? {
        do {
            try body()
            return nil
        } catch let e as OpenAIError {
            return e
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func chatRequestMapsParametersOntoNativeOptions() throws {
        let f = try fields(
            #"""
            {"model": "m", "messages": [{"role": "developer", "content": "Be brief."},
              {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
             "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "seed": -1,
             "stop": "x", "top_k": 3, "min_p": 0.1, "repeat_penalty": 1.2, "stream": true,
             "stream_options": {"include_usage": true}, "user": "ignored", "n": 1, "logprobs": false}
            """#)
        let chat = try OpenAIChatRequest(f)
        #expect(chat.messages.map(\.role) == [.system, .user])
        #expect(chat.messages[1].content == "ab")
        let p = chat.parameters
        #expect(p.model == "m" && p.stream && p.includeUsage)
        #expect(p.options.maxTokens == 7 && p.maxTokensParam == "max_completion_tokens")
        #expect(p.options.temperature == 0.5 && p.options.topP == 0.9 && p.options.topK == 3)
        #expect(p.options.seed == UInt64.max)
        #expect(p.options.stop?.values == ["x"])
        #expect(p.options.repeatPenalty == 1.2 && p.options.minP == 0.1)
    }

    @Test func refusedAndUnknownParametersAreNamedTogether() throws {
        let f = try fields(#"{"model": "m", "messages": [], "n": 2, "web_search_options": {}, "frobnicate": 1}"#)
        let e = try #require(error { _ = try OpenAIChatRequest(f) })
        #expect(e.status == 400 && e.code == .unsupportedParameter)
        #expect(e.param == "n")
        #expect(
            e.message.contains("n=2") && e.message.contains("web_search_options") && e.message.contains("frobnicate"))
    }

    @Test func neutralValuesOfRefusedParametersPass() throws {
        let f = try fields(
            #"""
            {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1, "tools": [],
             "tool_choice": "none", "logit_bias": {}, "top_logprobs": 0, "response_format": {"type": "text"},
             "functions": null}
            """#)
        #expect(error { _ = try OpenAIChatRequest(f) } == nil)
    }

    /// They used to be refused unless 0 ("use the repeat_penalty extension"); now they are
    /// OpenAI's penalties, on both routes, onto the native options.
    @Test func presenceAndFrequencyPenaltiesAreAcceptedOnBothRoutes() throws {
        let chat = try OpenAIChatRequest(
            try fields(
                #"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "presence_penalty": 0.5, "frequency_penalty": -1}"#
            ))
        #expect(chat.parameters.options.presencePenalty == 0.5 && chat.parameters.options.frequencyPenalty == -1)
        let text = try OpenAICompletionRequest(
            try fields(#"{"model": "m", "prompt": "hi", "frequency_penalty": 2, "presence_penalty": 0}"#))
        #expect(text.parameters.options.frequencyPenalty == 2 && text.parameters.options.presencePenalty == 0)
        let (sampling, _) = try text.parameters.options.validatedSamplingAndStop()
        #expect(sampling.frequencyPenalty == 2 && sampling.presencePenalty == 0)
        let absent = try OpenAIChatRequest(
            try fields(#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#))
        #expect(absent.parameters.options.presencePenalty == nil && absent.parameters.options.frequencyPenalty == nil)
        let wrongType = error {
            _ = try OpenAIChatRequest(
                try fields(
                    #"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "presence_penalty": "high"}"#))
        }
        #expect(wrongType?.param == "presence_penalty")
    }

    /// Out of [-2, 2]: 400 `invalid_option` naming the field as the caller spelt it.
    @Test func penaltiesOutOfRangeNameTheField() throws {
        for (key, value) in [("presence_penalty", "2.5"), ("frequency_penalty", "-2.01")] {
            let request = try OpenAIChatRequest(
                try fields(#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "\#(key)": \#(value)}"#))
            do {
                _ = try request.parameters.options.validatedSamplingAndStop(
                    names: .openAI(maxTokens: "max_tokens", prompt: "messages"))
                Issue.record("\(key)=\(value) was accepted")
            } catch {
                #expect(error.status == 400 && error.param == key, "\(error)")
                #expect(error.message.contains(key) && error.message.contains("between -2 and 2"), "\(error.message)")
            }
        }
    }

    @Test func badMessagesNameTheirPath() throws {
        func param(_ messages: String) throws -> String? {
            let f = try fields(#"{"model": "m", "messages": \#(messages)}"#)
            return error { _ = try OpenAIChatRequest(f) }?.param
        }
        #expect(try param("[]") == "messages")
        #expect(try param(#""hi""#) == "messages")
        #expect(try param(#"[{"role": "user"}]"#) == "messages[0].content")
        #expect(try param(#"[{"role": "user", "content": 3}]"#) == "messages[0].content")
        #expect(try param(#"[{"role": "tool", "content": "x"}]"#) == "messages[0].tool_call_id")
        #expect(try param(#"[{"role": "function", "content": "x"}]"#) == "messages[0].role")
        #expect(try param(#"[{"role": "user", "content": [{"type": "image_url"}]}]"#) == "messages[0].content[0].type")
        #expect(
            try param(#"[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool_calls": [{}]}]"#)
                == "messages[1].tool_calls[0].id")
    }

    @Test func missingModelAndStreamOptionsWithoutStream() throws {
        let noModel = error { _ = try OpenAIChatRequest(try fields(#"{"messages": []}"#)) }
        #expect(noModel?.param == "model" && noModel?.code == .missingRequiredParameter)
        let options = error {
            _ = try OpenAIChatRequest(
                try fields(
                    #"{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}}"#
                ))
        }
        #expect(options?.param == "stream_options")
    }

    @Test func completionPromptsAndDefaults() throws {
        let text = try OpenAICompletionRequest(try fields(#"{"model": "m", "prompt": "hi"}"#))
        #expect(text.prompts == [.text("hi")] && text.n == 1 && !text.echo)
        #expect(text.parameters.options.maxTokens == 16)
        let ids = try OpenAICompletionRequest(try fields(#"{"model": "m", "prompt": [1, 2, 3], "max_tokens": 4}"#))
        #expect(ids.prompts == [.tokens([1, 2, 3])] && ids.parameters.options.maxTokens == 4)
        #expect(
            try OpenAICompletionRequest(try fields(#"{"model": "m", "prompt": ["one"]}"#)).prompts == [.text("one")])
        let many = try OpenAICompletionRequest(try fields(#"{"model": "m", "prompt": ["a", [5, 6], "b"], "n": 2}"#))
        #expect(many.prompts == [.text("a"), .tokens([5, 6]), .text("b")] && many.n == 2)
        let lists = try OpenAICompletionRequest(try fields(#"{"model": "m", "prompt": [[1], [2, 3]]}"#))
        #expect(lists.prompts == [.tokens([1]), .tokens([2, 3])])
        let echo = try OpenAICompletionRequest(
            try fields(#"{"model": "m", "prompt": "a", "echo": true, "max_tokens": 0, "logprobs": 1}"#))
        #expect(echo.echo && echo.parameters.scoresOnly && echo.parameters.logprobs?.top == 1)
    }

    @Test func completionRefusalsNameTheField() throws {
        func param(_ body: String) -> String? {
            error { _ = try OpenAICompletionRequest(try fields(body)) }?.param
        }
        #expect(param(#"{"model": "m", "prompt": ["a", 7]}"#) == "prompt[1]")
        #expect(param(#"{"model": "m", "prompt": [[1], [-2]]}"#) == "prompt[1]")
        #expect(param(#"{"model": "m", "prompt": [[1], []]}"#) == "prompt[1]")
        #expect(param(#"{"model": "m", "prompt": []}"#) == "prompt")
        #expect(param(#"{"model": "m", "prompt": "a", "n": 0}"#) == "n")
        #expect(param(#"{"model": "m", "prompt": "a", "n": 17}"#) == "n")
        let tooMany = "[" + Array(repeating: #""a""#, count: 65).joined(separator: ",") + "]"
        #expect(param(#"{"model": "m", "prompt": \#(tooMany)}"#) == "prompt")
        let choices = "[" + Array(repeating: #""a""#, count: 5).joined(separator: ",") + "]"
        #expect(param(#"{"model": "m", "prompt": \#(choices), "n": 16}"#) == "n")
        #expect(param(#"{"model": "m", "prompt": "a", "max_tokens": 0, "logprobs": 1}"#) == "max_tokens")
        #expect(param(#"{"model": "m", "prompt": "a", "max_tokens": 0, "echo": true}"#) == "logprobs")
        #expect(param(#"{"model": "m", "prompt": "a", "suffix": "b"}"#) == "suffix")
    }

    @Test func deltasAreTheNewSuffixOfEachSnapshot() {
        let t = OpenAIDeltaTracker()
        #expect(t.delta(for: "") == nil)
        #expect(t.delta(for: "Hé") == "Hé")
        #expect(t.delta(for: "Hé") == nil)
        #expect(t.delta(for: "Héllo 🌍") == "llo 🌍")
        #expect(t.delta(for: "Other") == nil)
        #expect(t.text == "Héllo 🌍")
    }

    @Test func errorsEncodeAllFourFieldsWithNulls() throws {
        let r = OpenAIError.invalid("bad", param: nil, code: .invalidValue).response
        guard case .bytes(let bytes) = r.body else {
            Issue.record("expected a body")
            return
        }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let error = try #require(json["error"] as? [String: Any])
        #expect(Set(error.keys) == ["message", "type", "param", "code"])
        #expect(error["param"] is NSNull)
        #expect(r.status == 400)
    }
}
