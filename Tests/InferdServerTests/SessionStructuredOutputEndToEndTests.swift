import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// Structured output in session turns and conversation responses, with the real model: a turn
/// takes `options.format` as a stateless generation does, its snapshots carry partial values
/// that parse, its end is validated only when the grammar allowed it, and a cancel mid-structure
/// keeps the partial value without a validated one.
@Suite struct SessionStructuredOutputEndToEndTests {
    typealias S = StructuredOutputEndToEndTests

    func createSession(_ s: RunningServer) async throws -> String {
        let r = try await offPool { try s.client().postJSON("/v1/sessions", #"{"instructions":"Answer in JSON."}"#) }
        return try #require(r.json?["id"] as? String, "\(r.text)")
    }

    func turnBody(_ prompt: String, schema: String, maxTokens: Int, stream: Bool) -> String {
        #"{"prompt":\#(jsonString([prompt]).dropFirst().dropLast()),"stream":\#(stream),"options":{"temperature":0,"max_tokens":\#(maxTokens),"format":{"type":"json_schema","schema":\#(schema)}}}"#
    }

    @Test func aSessionTurnUnderASchemaStreamsPartialValuesAndEndsValidated() async throws {
        try await RunningServer.with { s in
            let sid = try await createSession(s)
            let body = turnBody("Invent a person.", schema: S.personSchema, maxTokens: 120, stream: true)
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client()
                _ = try c.startStream("/v1/sessions/\(sid)/responses", body)
                var reader = SSEReader()
                _ = try c.readEvents(into: &reader) { r in
                    r.events.contains { ["completed", "error", "cancelled"].contains($0.name) }
                }
                return reader
            }
            let snapshots = reader.events.filter { $0.name == "snapshot" }.map { jsonObject($0.data) }
            #expect(snapshots.count >= 2)
            var previous: Any? = nil
            for snap in snapshots {
                #expect(snap["partial"] as? Bool == true)
                let v = try #require(snap["value"], "every snapshot of a JSON answer has a value: \(snap)")
                if let previous { #expect(S().consistent(previous, v), "\(previous) then \(v)") }
                previous = v
            }
            let done = jsonObject(try #require(reader.events.last { $0.name == "completed" }, "\(reader.text)").data)
            #expect(done["finish_reason"] as? String == "stop" && done["partial"] as? Bool == false, "\(done)")
            S().checkPerson(done["value"])
            let content = try #require(done["content"] as? String)
            let name = try #require(content.range(of: "\"name\""))
            let age = try #require(content.range(of: "\"age\""))
            #expect(name.lowerBound < age.lowerBound, "the schema's key order: \(content)")
            // The JSON answer is the transcript's response; a second turn (not streamed) too.
            let second = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(sid)/responses",
                    turnBody("Another one.", schema: S.personSchema, maxTokens: 120, stream: false))
            }
            let json = try #require(second.json, "\(second.text)")
            #expect(json["partial"] as? Bool == false, "\(json)")
            S().checkPerson(json["value"])
            let session = try await offPool { try s.client().request("GET", "/v1/sessions/\(sid)") }
            let transcript = try #require(session.json?["transcript"] as? [[String: Any]])
            #expect(
                transcript.filter { $0["type"] as? String == "response" }.map { $0["content"] as? String } == [
                    content, json["content"] as? String,
                ])
            // A turn without a format has no value.
            let plain = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(sid)/responses", #"{"prompt":"Thanks.","options":{"max_tokens":2}}"#)
            }
            #expect(
                plain.status == 200 && plain.json?["value"] == nil && plain.json?["partial"] == nil, "\(plain.text)")
        }
    }

    @Test func aCancelMidStructureKeepsThePartialValueAndValidatesNothing() async throws {
        try await RunningServer.with { s in
            let sid = try await createSession(s)
            let schema =
                #"{"type":"object","properties":{"story":{"type":"string","minLength":4000}},"required":["story"]}"#
            let body = turnBody("Write a story.", schema: schema, maxTokens: 1500, stream: true)
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client()
                _ = try c.startStream("/v1/sessions/\(sid)/responses", body)
                var reader = SSEReader()
                var cancelled = false
                _ = try c.readEvents(into: &reader) { r in
                    // Once the story has begun, a cancel from another connection.
                    if !cancelled, r.events.contains(where: { $0.name == "snapshot" && $0.data.contains("story") }) {
                        cancelled = true
                        _ = try? s.client().postJSON("/v1/sessions/\(sid)/cancel", "{}")
                    }
                    return r.events.contains { ["completed", "error", "cancelled"].contains($0.name) }
                }
                return reader
            }
            let end = try #require(reader.events.last, "\(reader.text)")
            #expect(end.name == "cancelled", "\(reader.text)")
            let done = jsonObject(end.data)
            #expect(done["finish_reason"] as? String == "cancelled" && done["partial"] as? Bool == true, "\(done)")
            let content = try #require(done["content"] as? String)
            #expect(content.hasPrefix("{") && (try? JSONSerialization.jsonObject(with: Data(content.utf8))) == nil)
            let value = try #require(done["value"] as? [String: Any], "\(done)")
            // (A cancel just after the story opened leaves it empty, which every text holds; Swift's
            // `contains("")` says false, so only a story begun is looked for.)
            if let story = value["story"] as? String, !story.isEmpty { #expect(content.contains(story)) }
        }
    }

    @Test func theChatRoutesSessionIDTakesAResponseFormat() async throws {
        try await RunningServer.with { s in
            let sid = try await createSession(s)
            let model = try SharedModel.engine().modelName
            let body = #"""
                {"model":\#(jsonString([model]).dropFirst().dropLast()),"session_id":"\#(sid)","temperature":0,"max_tokens":120,
                 "messages":[{"role":"user","content":"Invent a person."}],
                 "response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":\#(S.personSchema)}}}
                """#
            let r = try await offPool { try s.client().postJSON("/v1/chat/completions", body) }
            let choice = try #require((r.json?["choices"] as? [[String: Any]])?.first, "\(r.text)")
            #expect(choice["finish_reason"] as? String == "stop")
            let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
            S().checkPerson(try? JSONSerialization.jsonObject(with: Data(content.utf8)))
        }
    }

    @Test func aSessionsDefaultOptionsCannotHoldAFormat() async throws {
        try await RunningServer.with(state: .ready(ScriptedBackend(reply: "{}"))) { s in
            let r = try await offPool {
                try s.client().postJSON("/v1/sessions", #"{"options":{"format":{"type":"json_object"}}}"#)
            }
            #expect(WireError(r).status == 400 && WireError(r).param == "options.format", "\(r.text)")
        }
    }

    @Test func aConversationResponseTakesTextFormat() async throws {
        try await RunningServer.with { s in
            let conv = try #require(
                try await ResponsesAPIEndToEndTests.post(s, "/v1/conversations", "{}").json?["id"] as? String)
            let model = try SharedModel.engine().modelName
            let body = #"""
                {"model":\#(jsonString([model]).dropFirst().dropLast()),"conversation":"\#(conv)","input":"Invent a person.",
                 "temperature":0,"max_output_tokens":120,
                 "text":{"format":{"type":"json_schema","name":"person","strict":true,"schema":\#(S.personSchema)}}}
                """#
            let r = try await ResponsesAPIEndToEndTests.post(s, "/v1/responses", body)
            let json = try #require(r.json, "\(r.text)")
            #expect(json["status"] as? String == "completed", "\(json)")
            let text = try #require(ResponsesAPIEndToEndTests.outputText(json))
            S().checkPerson(try? JSONSerialization.jsonObject(with: Data(text.utf8)))
        }
    }
}
