import Engine
import Foundation
import StructuredOutput
import TestSupport
import Testing

@testable import InferdServer

/// Structured output over a real socket with the real model: schemas, JSON mode and grammars on
/// the native and OpenAI routes, snapshots whose `value` always parses, and typed 400s.
@Suite struct StructuredOutputEndToEndTests {
    /// Written as text: the key order (`name` before `age`) is part of what is tested.
    static let personSchema = #"""
        {"type":"object","properties":{"name":{"type":"string","maxLength":20},
         "age":{"type":"integer","minimum":0,"maximum":120},"tags":{"type":"array","items":{"type":"string","maxLength":10},"maxItems":2}},
         "required":["name","age","tags"],"additionalProperties":false}
        """#

    func nativeBody(_ prompt: String, format: String, maxTokens: Int, stream: Bool) -> String {
        #"{"prompt":\#(jsonString([prompt]).dropFirst().dropLast()),"stream":\#(stream),"options":{"temperature":0,"max_tokens":\#(maxTokens),"format":\#(format)}}"#
    }

    /// A later partial value never contradicts an earlier one: members stay, strings only grow.
    func consistent(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (let x as [String: Any], let y as [String: Any]):
            return x.allSatisfy { k, v in y[k].map { consistent(v, $0) } ?? false }
        case (let x as [Any], let y as [Any]):
            return y.count >= x.count && zip(x, y).allSatisfy { consistent($0, $1) }
        case (let x as String, let y as String):
            return y.hasPrefix(x)
        default:
            return (a as? NSObject) == (b as? NSObject)
        }
    }

    func checkPerson(_ v: Any?) {
        let person = v as? [String: Any]
        #expect(person?.keys.sorted() == ["age", "name", "tags"])
        #expect((person?["name"] as? String).map { $0.count <= 20 } == true)
        #expect((person?["age"] as? Int).map { (0...120).contains($0) } == true)
        #expect((person?["tags"] as? [String]).map { $0.count <= 2 } == true)
    }

    @Test func nativeStreamSnapshotsCarryValuesThatParseAndTheEndIsValidated() async throws {
        try await RunningServer.with { s in
            let body = nativeBody(
                "Invent a person. Answer in JSON.", format: #"{"type":"json_schema","schema":\#(Self.personSchema)}"#,
                maxTokens: 120, stream: true)
            let reader = try await offPool { () -> SSEReader in
                let c = try s.client()
                _ = try c.startStream("/v1/generations", body)
                var reader = SSEReader()
                try c.readEvents(into: &reader) { r in
                    r.events.contains { ["completed", "error", "cancelled"].contains($0.name) }
                }
                return reader
            }
            let snapshots = reader.events.filter { $0.name == "snapshot" }.map { jsonObject($0.data) }
            #expect(snapshots.count >= 2)
            var previous: Any? = nil
            for snap in snapshots {
                #expect(snap["partial"] as? Bool == true)
                if let v = snap["value"] {
                    if let previous { #expect(consistent(previous, v), "\(previous) then \(v)") }
                    previous = v
                }
            }
            let done = jsonObject(try #require(reader.events.last { $0.name == "completed" }).data)
            #expect(done["finish_reason"] as? String == "stop")
            #expect(done["partial"] as? Bool == false)
            checkPerson(done["value"])
            let content = try #require(done["content"] as? String)
            // The schema's key order, not the alphabet's.
            let name = try #require(content.range(of: "\"name\""))
            let age = try #require(content.range(of: "\"age\""))
            #expect(name.lowerBound < age.lowerBound, "\(content)")
        }
    }

    @Test func aCutAnswerEndsWithItsPartialValueAndIsNeverValidated() async throws {
        try await RunningServer.with { s in
            let body = nativeBody(
                "Invent a person. Answer in JSON.", format: #"{"type":"json_schema","schema":\#(Self.personSchema)}"#,
                maxTokens: 6, stream: false)
            let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
            #expect(r.status == 200)
            let json = try #require(r.json)
            #expect(json["finish_reason"] as? String == "length")
            #expect(json["partial"] as? Bool == true)
            #expect(json["value"] is [String: Any], "the closed partial value: \(json)")
        }
    }

    @Test func aTimedOutAnswerKeepsItsPartialValueAndIsNeverValidated() async throws {
        try await RunningServer.with { s in
            // A story of at least 4,000 characters (about 1,000 tokens) cannot be done in 1.5 s on
            // this CPU, while its first tokens come well within it once the vocabulary's token trie
            // is built (the first structured request builds it: warmed up here, so a slow first
            // build on a loaded machine cannot eat the whole budget).
            let warm = #"{"prompt":"Hi","options":{"max_tokens":2,"format":{"type":"json_object"}}}"#
            _ = try await offPool { try s.client().postJSON("/v1/generations", warm) }
            let schema =
                #"{"type":"object","properties":{"story":{"type":"string","minLength":4000}},"#
                + #""required":["story"]}"#
            let body = #"""
                {"prompt":"Write a story.","timeout_seconds":1.5,
                 "options":{"temperature":0,"max_tokens":1500,"format":{"type":"json_schema","schema":\#(schema)}}}
                """#
            let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
            #expect(r.status == 200)
            let json = try #require(r.json)
            #expect(json["finish_reason"] as? String == "timeout")
            #expect(json["partial"] as? Bool == true)
            let content = try #require(json["content"] as? String)
            let parsed = try? JSONSerialization.jsonObject(with: Data(content.utf8))
            #expect(parsed == nil, "cut, so not JSON: \(content)")
            // The value is the closed prefix: an object whose story (if begun) is in the text.
            #expect(content.hasPrefix("{"), "\(content)")
            let value = try #require(json["value"] as? [String: Any])
            if let story = value["story"] as? String { #expect(content.contains(story)) }
        }
    }

    @Test func sampledAnswersValidateToo() async throws {
        try await RunningServer.with { s in
            for seed in [3, 11] {
                let body = #"""
                    {"prompt":"Invent a person. Answer in JSON.",
                     "options":{"temperature":0.9,"seed":\#(seed),"max_tokens":160,
                     "format":{"type":"json_schema","schema":\#(Self.personSchema)}}}
                    """#
                let r = try await offPool { try s.client().postJSON("/v1/generations", body) }
                let json = try #require(r.json)
                #expect(json["finish_reason"] as? String == "stop", "\(json)")
                #expect(json["partial"] as? Bool == false)
                checkPerson(json["value"])
            }
        }
    }

    @Test func unsupportedKeywordIs400NamingItAndItsPath() async throws {
        try await RunningServer.with { s in
            let schema = #"{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}"#
            let native = nativeBody(
                "x", format: #"{"type":"json_schema","schema":\#(schema)}"#, maxTokens: 5, stream: false)
            let r = try await offPool { try s.client().postJSON("/v1/generations", native) }
            #expect(r.status == 400)
            let error = r.json?["error"] as? [String: Any]
            #expect(
                (error?["message"] as? String)?.contains("'uniqueItems' at $.properties.a") == true, "\(r.json ?? [:])")
            #expect(error?["param"] as? String == "options.format.schema")
            let model = try SharedModel.engine().modelName
            let chat = #"""
                {"model":"\#(model)","messages":[{"role":"user","content":"x"}],
                 "response_format":{"type":"json_schema","json_schema":{"name":"t","schema":\#(schema)}}}
                """#
            let o = try await offPool { try s.client().postJSON("/v1/chat/completions", chat) }
            #expect(o.status == 400)
            let oe = o.json?["error"] as? [String: Any]
            #expect((oe?["message"] as? String)?.contains("uniqueItems") == true)
            #expect(oe?["param"] as? String == "response_format.json_schema.schema")
            let badGrammar = #"{"model":"\#(model)","prompt":"x","grammar":"root ::= \"a"}"#
            let g = try await offPool { try s.client().postJSON("/v1/completions", badGrammar) }
            #expect(g.status == 400)
            #expect(((g.json?["error"] as? [String: Any])?["message"] as? String)?.contains("line 1") == true)
        }
    }

    @Test func openAIChatJSONSchemaAndJSONModeAndGrammar() async throws {
        try await RunningServer.with { s in
            let model = try SharedModel.engine().modelName
            let chat = #"""
                {"model":"\#(model)","temperature":0,"max_tokens":120,
                 "messages":[{"role":"user","content":"Invent a person."}],
                 "response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":\#(Self.personSchema)}}}
                """#
            let r = try await offPool { try s.client().postJSON("/v1/chat/completions", chat) }
            #expect(r.status == 200)
            let choice = (r.json?["choices"] as? [[String: Any]])?.first
            let content = ((choice?["message"] as? [String: Any])?["content"] as? String) ?? ""
            #expect(choice?["finish_reason"] as? String == "stop")
            checkPerson(try? JSONSerialization.jsonObject(with: Data(content.utf8)))
            let mode = #"""
                {"model":"\#(model)","temperature":0,"max_tokens":300,
                 "messages":[{"role":"user","content":"Reply with a JSON object with one key, greeting."}],
                 "response_format":{"type":"json_object"}}
                """#
            let m = try await offPool { try s.client().postJSON("/v1/chat/completions", mode) }
            let mc = (((m.json?["choices"] as? [[String: Any]])?.first?["message"]) as? [String: Any])?["content"]
            let modeText = (mc as? String) ?? ""
            let modeFinish = ((m.json?["choices"] as? [[String: Any]])?.first?["finish_reason"]) as? String
            if modeFinish == "stop" {
                #expect((try? JSONSerialization.jsonObject(with: Data(modeText.utf8))) is [String: Any], "\(modeText)")
            } else {
                // This small model may nest on past the budget: then the text is an object's prefix.
                #expect(modeFinish == "length")
                let matcher = GrammarMatcher(grammar: try StructuredFormat.jsonObject.compiledGrammar())
                #expect(matcher.accept(bytes: Array(modeText.utf8)) && !matcher.canEnd, "\(modeText)")
            }
            let grammar = #"""
                {"model":"\#(model)","temperature":0,"max_tokens":20,"prompt":"Is the sky blue? Answer:",
                 "grammar":"root ::= \" \" (\"yes\" | \"no\") \".\""}
                """#
            let g = try await offPool { try s.client().postJSON("/v1/completions", grammar) }
            #expect(g.status == 200)
            let text = ((g.json?["choices"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
            #expect(text == " yes." || text == " no.", "\(text)")
        }
    }
}
