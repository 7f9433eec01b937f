import Foundation
import Testing

@testable import RemoteBackend

/// The upstream body's writer: what it writes reads back (with Foundation's independent parser)
/// as the value it was given, keys sorted, strings escaped, raw text kept byte for byte.
@Suite struct UpstreamJSONTests {
    func text(_ value: Any) throws -> String { String(decoding: try UpstreamJSON.encode(value), as: UTF8.self) }

    @Test func aChatBodyReadsBackAsItWasWithKeysSorted() throws {
        let body: [String: Any] = [
            "model": "m", "stream": true, "stream_options": ["include_usage": true], "max_tokens": 8,
            "temperature": Double(Float(0.7)), "seed": 42, "stop": ["\n\n", "END"],
            "messages": [["role": "user", "content": "Say \"hi\" \\ then\ttab, é, 😀, \u{1}."]],
        ]
        let written = try text(body)
        #expect(
            written.hasPrefix(
                #"{"max_tokens":8,"messages":[{"content":"Say \"hi\" \\ then\ttab, é, 😀, \u0001.","role":"user"}],"model":"m","#
            ), "\(written)")
        let back = try #require(try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
        // The same value: Foundation writes what it read back and what was given alike.
        func canonical(_ v: Any) throws -> Data {
            try JSONSerialization.data(withJSONObject: v, options: [.sortedKeys])
        }
        #expect(try canonical(back) == canonical(body))
        #expect((back["messages"] as? [[String: String]])?.first?["content"] == "Say \"hi\" \\ then\ttab, é, 😀, \u{1}.")
        #expect(back["temperature"] as? Double == Double(Float(0.7)))
        #expect(back["stream"] as? Bool == true)
        #expect(written.contains(#""stream":true"#) && written.contains(#""seed":42"#))
        // Every key of every object in order.
        let keys = ["max_tokens", "messages", "model", "seed", "stop", "stream", "stream_options", "temperature"]
        let positions = keys.map { written.range(of: "\"\($0)\":")!.lowerBound }
        #expect(positions == positions.sorted())
    }

    @Test func numbersAndTheEmptyOnes() throws {
        #expect(
            try text([0.0, 2.0, -3.5, 1e300, 0.1, Int32(-7), Float(0.5)] as [Any]) == "[0,2,-3.5,1e+300,0.1,-7,0.5]")
        #expect(try text([String: Any]()) == "{}")
        #expect(try text([Any]()) == "[]")
        #expect(try text(NSNull()) == "null")
        #expect(try text(false) == "false")
        #expect(try text(1) == "1")
    }

    @Test func rawTextIsWrittenAsItIs() throws {
        let schema = #"{"type":"object","properties":{"zeta":{},"alpha":{}}}"#
        #expect(try text(["b": UpstreamJSON.Raw(text: schema), "a": 1]) == #"{"a":1,"b":"# + schema + "}")
    }

    @Test func whatHasNoJSONFormIsAnErrorNotSkipped() {
        #expect(throws: UpstreamJSON.Unencodable.self) { try UpstreamJSON.encode(["x": Double.nan]) }
        #expect(throws: UpstreamJSON.Unencodable.self) { try UpstreamJSON.encode(["x": Date()]) }
        #expect(throws: UpstreamJSON.Unencodable.self) { try UpstreamJSON.encode([Double.infinity]) }
    }
}
