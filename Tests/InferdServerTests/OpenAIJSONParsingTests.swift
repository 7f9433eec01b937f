import Foundation
import HTTPServer
import Testing

@testable import InferdServer

/// Request bodies read into `OpenAIJSON` by the project's parser: types as written, the same
/// values Foundation's decoder gave (checked against it), and each refusal as its own error.
@Suite struct OpenAIJSONParsingTests {
    func request(_ body: String, contentType: String = "application/json") -> HTTPRequest {
        HTTPRequest(
            id: "r", method: .post, path: "/", headers: HTTPHeaders([("content-type", contentType)]),
            body: Array(body.utf8))
    }

    func error(_ body: String, contentType: String = "application/json") -> HTTPError? {
        do {
            _ = try OpenAIJSON.object(of: request(body, contentType: contentType))
            return nil
        } catch {
            return error as? HTTPError
        }
    }

    /// A schema keeps the body's key order (its properties are generated in that order), read
    /// from the body's one parse, whichever surface carries it.
    @Test func aSchemaKeepsTheBodysKeyOrderFromItsOneParse() throws {
        let schema = #"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}"#
        let native = try GenerationRequestBody(
            request(#"{"prompt":"x","options":{"format":{"type":"json_schema","schema":\#(schema)}}}"#))
        let openAI = try OpenAIChatRequest(
            try OpenAIJSON.fields(
                of: request(
                    #"{"model":"m","messages":[{"role":"user","content":"x"}],"#
                        + #""response_format":{"type":"json_schema","json_schema":{"name":"n","#
                        + #""schema":\#(schema)}}}"#)))
        for format in [native.options?.format, openAI.parameters.options.format] {
            let properties = try #require(format?.schema?["properties"]?.objectMembers)
            #expect(properties.map(\.key) == ["zeta", "alpha"])
        }
    }

    @Test func valuesKeepTheirTypesAndMatchFoundationsDecoder() throws {
        let body = #"""
            {"model":"m","n":3,"neg":-9223372036854775808,"big":9223372036854775808,"t":0.5,"w":2.0,"e":1e2,
             "ok":true,"no":false,"nothing":null,"list":[1,"a",[],{}],"o":{"k":"v \"q\" \u00e9 \ud83d\ude00"}}
            """#
        let parsed = try OpenAIJSON.object(of: request(body))
        #expect(parsed["n"] == .int(3))
        #expect(parsed["neg"] == .int(Int64.min))
        #expect(parsed["big"] == .double(9223372036854775808))
        #expect(parsed["t"] == .double(0.5))
        #expect(parsed["w"] == .double(2))
        #expect(parsed["e"] == .double(100))
        #expect(parsed["ok"] == .bool(true) && parsed["no"] == .bool(false) && parsed["nothing"] == .null)
        #expect(parsed["list"] == .array([.int(1), .string("a"), .array([]), .object([:])]))
        #expect(parsed["o"] == .object(["k": .string("v \"q\" é 😀")]))
        // Foundation's decoder reads the same values (it may call a whole 2.0 an integer; the
        // typed reads accept either, so compare numbers by value).
        let foundation = try JSONDecoder().decode([String: OpenAIJSON].self, from: Data(body.utf8))
        #expect(Set(foundation.keys) == Set(parsed.keys))
        for (key, value) in foundation {
            if let n = value.number {
                #expect(parsed[key]?.number == n, "\(key)")
            } else {
                #expect(parsed[key] == value, "\(key)")
            }
        }
    }

    /// A key given twice is refused at any depth, naming its path, instead of the last one
    /// counting (a gateway that reads the first would see another request).
    @Test func aKeyGivenTwiceIsRefusedAtAnyDepthNamingItsPath() throws {
        let cases: [(String, String)] = [
            (#"{"a":1,"a":"two"}"#, "a"),
            (#"{"model":"m","stream":false,"x":{},"stream":true}"#, "stream"),
            (#"{"options":{"temperature":0,"seed":1,"temperature":2}}"#, "options.temperature"),
            (#"{"messages":[{"role":"user","content":"hi"},{"role":"user","role":"system"}]}"#, "messages[1].role"),
            (#"{"a":[[{"k":1}],[{"k":1,"k":2}]]}"#, "a[1][0].k"),
            (
                #"{"f":{"schema":{"properties":{"p":{"type":"string"},"p":{"type":"integer"}}}}}"#,
                "f.schema.properties.p"
            ),
            // Escapes are read before keys are compared: "\u0061" is "a".
            (#"{"a":1,"\u0061":2}"#, "a"),
            // Two spellings of one canonical form read as one key too (the Kelvin sign is "K").
            ("{\"K\":1,\"\u{212A}\":2}", "\u{212A}"),
        ]
        for (body, path) in cases {
            let e = error(body)
            #expect(
                e?.status == 400 && e?.code == .duplicateKey && e?.param == path, "\(body) → \(String(describing: e))")
            #expect(e?.message.contains("twice") == true)
        }
        // The same key in different objects, or a value repeating a key's text, is fine.
        let fine = try OpenAIJSON.object(of: request(#"{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}"#))
        #expect(fine.count == 3)
    }

    @Test func refusalsKeepTheirCodes() {
        #expect(error(#"{"a":1,}"#)?.code == .invalidJSON)
        #expect(error(#"{"a":1,}"#)?.message.contains("byte 7") == true)
        #expect(error(#"{"a":tru}"#)?.code == .invalidJSON)
        #expect(error(#"{"a":1} x"#)?.code == .invalidJSON)
        #expect(error(#"[1,2]"#)?.code == .invalidValue)
        #expect(error(#""text""#)?.code == .invalidValue)
        #expect(error("")?.code == .missingBody)
        #expect(error(#"{}"#, contentType: "text/plain")?.status == 415)
        #expect(error(String(repeating: "[", count: 70) + String(repeating: "]", count: 70))?.code == .jsonTooDeep)
    }
}
