import Backend
import Engine
import Foundation
import RemoteBackend
import StructuredOutput
import Testing

extension RemoteEndToEnd {
    /// Structured output over a remote engine: the format reaches the upstream as `response_format`
    /// (or `grammar`), read back from the scripted upstream's echo of the request body.
    @Suite(.serialized) struct UpstreamFormatTests {
        let helper = FakeUpstreamTests()

        /// The body the upstream received for a generation constrained by `format`.
        func sent(_ format: StructuredFormat, to upstream: FakeUpstream) async throws -> [String: Any] {
            let b = helper.backend([upstream.url("echo")])
            let constraint = try #require(
                b.makeConstraint(grammar: try format.compiledGrammar(), identity: format.identity))
            var r = helper.request(b)
            r.constraint = constraint
            let result = try await helper.run(b, r).get()
            return try #require(try JSONSerialization.jsonObject(with: Data(result.content.utf8)) as? [String: Any])
        }

        @Test func aSchemaGoesAsResponseFormatWithItsKeysInOrder() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let schemaText =
                #"{"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"string"}},"required":["zeta","alpha"]}"#
            let body = try await sent(.jsonSchema(try JSONParser.parse(schemaText)), to: upstream)
            let format = try #require(body["response_format"] as? [String: Any])
            #expect(format["type"] as? String == "json_schema")
            let spec = try #require(format["json_schema"] as? [String: Any])
            #expect(spec["strict"] as? Bool == true)
            #expect(spec["name"] as? String == "response")
            let schema = try #require(spec["schema"] as? [String: Any])
            #expect(schema["required"] as? [String] == ["zeta", "alpha"])
            #expect(body["grammar"] == nil)
            // Key order survives (the encoder sorts keys; the schema is spliced in as written).
            let echoed = try await echoText(.jsonSchema(try JSONParser.parse(schemaText)), upstream)
            #expect(echoed.contains(#""properties":{"zeta":{"type":"integer"},"alpha":{"type":"string"}}"#))
        }

        @Test func jsonModeAndGrammarGoAsTheirOwnFields() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let json = try await sent(.jsonObject, to: upstream)
            #expect((json["response_format"] as? [String: Any])?["type"] as? String == "json_object")
            let gbnf = #"root ::= "yes" | "no""#
            let grammar = try await sent(.grammar(gbnf), to: upstream)
            #expect(grammar["grammar"] as? String == gbnf)
            #expect(grammar["response_format"] == nil)
        }

        @Test func theAnswerIsCheckedAgainstTheFormatHereNotTakenOnTheUpstreamsWord() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = helper.backend([upstream.url("echo")])
            // The echo answers with the request body: a JSON object, but not one with a "zeta" only.
            for (format, satisfied) in [
                (StructuredFormat.jsonObject, true),
                (
                    .jsonSchema(
                        try JSONParser.parse(
                            #"{"type":"object","properties":{"zeta":{"type":"integer"}},"required":["zeta"],"additionalProperties":false}"#
                        )), false
                ),
            ] {
                var r = helper.request(b)
                r.constraint = b.makeConstraint(grammar: try format.compiledGrammar(), identity: format.identity)
                let result = try await helper.run(b, r).get()
                #expect(result.constraintSatisfied == satisfied, "\(format.identity)")
            }
            // Without a format there is nothing to satisfy.
            #expect(try await helper.run(b, helper.request(b)).get().constraintSatisfied == nil)
        }

        func echoText(_ format: StructuredFormat, _ upstream: FakeUpstream) async throws -> String {
            let b = helper.backend([upstream.url("echo")])
            var r = helper.request(b)
            r.constraint = b.makeConstraint(grammar: try format.compiledGrammar(), identity: format.identity)
            return try await helper.run(b, r).get().content
        }
    }
}
