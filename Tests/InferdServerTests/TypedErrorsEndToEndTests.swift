import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Every refusal over a real socket names its field as a value (`param`), with the right code:
/// wrong types and ranges are `invalid_value`, never "not valid JSON"; unknown fields are refused
/// on every native and session route as on the OpenAI ones; policies are checked at the edge.
/// The model is not the subject: a scripted backend serves (every case is refused before it
/// would generate).
@Suite struct TypedErrorsEndToEndTests {
    static let backend = ScriptedBackend(reply: "unused")

    func serve(_ body: (RunningServer) async throws -> Void) async throws {
        try await RunningServer.with(state: .ready(Self.backend), body)
        // Refused at the edge: nothing reached the backend.
        #expect(Self.backend.requests.isEmpty)
    }

    func post(_ s: RunningServer, _ path: String, _ body: String) async throws -> WireError {
        WireError(try await offPool { try s.client().postJSON(path, body) })
    }

    @Test(arguments: [
        (#"{"prompt":"hi","options":{"max_tokens":3.5}}"#, "options.max_tokens"),
        (#"{"prompt":"hi","options":{"seed":-1}}"#, "options.seed"),
        (#"{"prompt":"hi","options":{"temperature":1e308}}"#, "options.temperature"),
        (#"{"prompt":"hi","options":{"top_k":"many"}}"#, "options.top_k"),
        (#"{"prompt":"hi","options":{"stop":[1]}}"#, "options.stop"),
        (#"{"prompt":"hi","options":[]}"#, "options"),
        (#"{"prompt":5}"#, "prompt"),
        (#"{"prompt":"hi","stream":"yes"}"#, "stream"),
        (#"{"prompt":"hi","timeout_seconds":"soon"}"#, "timeout_seconds"),
    ])
    func wrongTypesAndRangesAreInvalidValues(body: String, field: String) async throws {
        try await serve { s in
            let e = try await post(s, "/v1/generations", body)
            #expect(e.status == 400 && e.code == "invalid_value" && e.param == field, "\(body) → \(e)")
            #expect(!e.message.contains("JSON"), "\(e)")
        }
    }

    /// A key given twice is a 400 `duplicate_key` naming its path on every surface, at any depth.
    @Test func duplicateKeysAreRefusedOnEverySurface() async throws {
        try await serve { s in
            let model = Self.backend.modelName
            let cases: [(String, String, String)] = [
                ("/v1/generations", #"{"prompt":"hi","prompt":"other"}"#, "prompt"),
                (
                    "/v1/generations", #"{"prompt":"hi","options":{"max_tokens":1,"max_tokens":900}}"#,
                    "options.max_tokens"
                ),
                ("/v1/sessions", #"{"options":{"temperature":0},"options":{}}"#, "options"),
                (
                    "/v1/chat/completions",
                    #"{"model":"\#(model)","messages":[{"role":"user","content":"a","content":"b"}]}"#,
                    "messages[0].content"
                ),
                ("/v1/responses", #"{"model":"\#(model)","input":"hi","model":"other"}"#, "model"),
                ("/v1/conversations", #"{"metadata":{"k":"1","k":"2"}}"#, "metadata.k"),
            ]
            for (path, body, field) in cases {
                let e = try await post(s, path, body)
                #expect(e.status == 400 && e.code == "duplicate_key" && e.param == field, "\(path) \(body) → \(e)")
            }
            // Nothing was created by the refused bodies.
            let list = try await offPool { try s.client().request("GET", "/v1/sessions") }
            #expect((list.json?["data"] as? [Any])?.count == 0)
        }
    }

    @Test func unknownFieldsAreRefusedOnEveryNativeRoute() async throws {
        try await serve { s in
            let cases: [(String, String, String)] = [
                ("/v1/generations", #"{"prompt":"hi","options":{"temprature":0}}"#, "options.temprature"),
                ("/v1/generations", #"{"prompt":"hi","max_tokens":5}"#, "max_tokens"),
                ("/v1/sessions", #"{"bogus":1}"#, "bogus"),
                ("/v1/sessions", #"{"options":{"max_token":5}}"#, "options.max_token"),
            ]
            for (path, body, field) in cases {
                let e = try await post(s, path, body)
                #expect(e.status == 400 && e.code == "unknown_parameter" && e.param == field, "\(body) → \(e)")
                #expect(e.message.contains(field), "\(e)")
            }
            // Nothing was created by the refused session.
            let list = try await offPool { try s.client().request("GET", "/v1/sessions") }
            #expect((list.json?["data"] as? [Any])?.count == 0)

            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let id = try #require(created.json?["id"] as? String)
            let turn = try await post(s, "/v1/sessions/\(id)/responses", #"{"prompt":"hi","stram":true}"#)
            #expect(turn.status == 400 && turn.code == "unknown_parameter" && turn.param == "stram", "\(turn)")
            let cancel = try await post(s, "/v1/sessions/\(id)/cancel", #"{"request":"x"}"#)
            #expect(cancel.status == 400 && cancel.code == "unknown_parameter" && cancel.param == "request")
            // The refused turn left no trace in the transcript.
            let got = try await offPool { try s.client().request("GET", "/v1/sessions/\(id)") }
            #expect((got.json?["transcript"] as? [Any])?.count == 0)
        }
    }

    @Test func rangeAndPolicyErrorsNameTheirField() async throws {
        try await serve { s in
            let cases: [(String, String, String, String)] = [
                (
                    "/v1/generations", #"{"prompt":"hi","options":{"temperature":-1}}"#, "invalid_option",
                    "options.temperature"
                ),
                (
                    "/v1/generations", #"{"prompt":"hi","options":{"max_tokens":0}}"#, "invalid_option",
                    "options.max_tokens"
                ),
                ("/v1/generations", #"{"prompt":"hi","options":{"stop":[""]}}"#, "invalid_option", "options.stop"),
                ("/v1/generations", #"{"prompt":"hi","priority":"urgent"}"#, "invalid_request", "priority"),
                ("/v1/generations", #"{"prompt":"hi","timeout_seconds":-2}"#, "invalid_request", "timeout_seconds"),
                ("/v1/generations", #"{"prompt":""}"#, "invalid_request", "prompt"),
                ("/v1/generations", #"{"instructions":"x"}"#, "invalid_request", "prompt"),
                ("/v1/sessions", #"{"on_busy":"wait"}"#, "invalid_request", "on_busy"),
                ("/v1/sessions", #"{"options":{"top_p":2}}"#, "invalid_option", "options.top_p"),
                (
                    "/v1/generations", #"{"prompt":"hi","options":{"frequency_penalty":2.5}}"#, "invalid_option",
                    "options.frequency_penalty"
                ),
                (
                    "/v1/sessions", #"{"options":{"presence_penalty":-3}}"#, "invalid_option",
                    "options.presence_penalty"
                ),
            ]
            for (path, body, code, field) in cases {
                let e = try await post(s, path, body)
                #expect(e.status == 400 && e.code == code && e.param == field, "\(body) → \(e)")
            }
            let created = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let id = try #require(created.json?["id"] as? String)
            let turn = try await post(s, "/v1/sessions/\(id)/responses", #"{"prompt":"hi","on_cancel":"drop"}"#)
            #expect(turn.status == 400 && turn.code == "invalid_request" && turn.param == "on_cancel", "\(turn)")
            let over = try await post(
                s, "/v1/sessions/\(id)/responses", #"{"prompt":"hi","options":{"max_tokens":5000}}"#)
            #expect(over.status == 400 && over.code == "max_tokens_too_large" && over.param == "options.max_tokens")
        }
    }

    /// The OpenAI routes get `param` from the same values, spelt as the caller spelt the field.
    @Test func openAIParamsComeFromValuesNotMessages() async throws {
        try await serve { s in
            let model = Self.backend.modelName
            func chat(_ extra: String) -> String {
                #"{"model":"\#(model)","messages":[{"role":"user","content":"hi"}]"# + extra + "}"
            }
            let cases: [(String, String, String)] = [
                (chat(#","max_completion_tokens":5000"#), "max_tokens_too_large", "max_completion_tokens"),
                (chat(#","max_tokens":0"#), "invalid_option", "max_tokens"),
                (chat(#","temperature":-1"#), "invalid_option", "temperature"),
                (chat(#","top_p":0"#), "invalid_option", "top_p"),
                (chat(#","presence_penalty":2.5"#), "invalid_option", "presence_penalty"),
                (chat(#","frequency_penalty":-2.5"#), "invalid_option", "frequency_penalty"),
                (chat(#","stop":["", "x"]"#), "invalid_option", "stop"),
                (chat(#","priority":"urgent""#), "invalid_value", "priority"),
                (chat(#","session_id":"sess_x","on_busy":"wait""#), "invalid_value", "on_busy"),
                (chat(#","timeout_seconds":0"#), "invalid_value", "timeout_seconds"),
            ]
            for (body, code, field) in cases {
                let e = try await post(s, "/v1/chat/completions", body)
                #expect(e.status == 400 && e.code == code && e.param == field, "\(body) → \(e)")
            }
            let text = try await post(
                s, "/v1/completions", #"{"model":"\#(model)","prompt":"hi","frequency_penalty":3}"#)
            #expect(text.status == 400 && text.code == "invalid_option" && text.param == "frequency_penalty", "\(text)")
            #expect(text.message.contains("between -2 and 2"), "\(text)")
            let budget = try await post(s, "/v1/chat/completions", chat(#","max_completion_tokens":5000"#))
            #expect(budget.message.contains("max_completion_tokens is 5000"), "\(budget)")
        }
    }
}
