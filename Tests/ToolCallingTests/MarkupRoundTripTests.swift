import GenerationVocabulary
import Testing

@testable import ToolCalling

/// Earlier calls written back into a history (`markup(for:)`) are what the format's own parser
/// reads as those calls: the model sees its past calls as it writes new ones.
@Suite struct MarkupRoundTripTests {
    static let calls = [
        ToolCall(id: "call_1", name: "get_weather", arguments: #"{"city": "Paris \"centre\"", "days": [1, 2]}"#),
        ToolCall(id: "call_2", name: "get_time", arguments: #"{"zone": "UTC", "exact": true, "offset": null}"#),
    ]

    @Test(arguments: ToolCallFormats.names)
    func markupParsesBackToTheCalls(_ name: String) throws {
        let format = try #require(ToolCallFormats.named(name))
        let parsed = format.parse(format.markup(for: Self.calls), final: true)
        #expect(parsed.content == "", "\(name): \(format.markup(for: Self.calls))")
        #expect(parsed.calls.map(\.name) == ["get_weather", "get_time"], "\(name)")
        #expect(parsed.calls.allSatisfy { $0.complete }, "\(name)")
        // JSON formats keep the arguments' text; pythonic converts them to JSON (same values).
        if name != "pythonic" {
            #expect(parsed.calls.map(\.arguments) == Self.calls.map(\.arguments), "\(name)")
        } else {
            #expect(
                parsed.calls.map(\.arguments) == [
                    #"{"city": "Paris \"centre\"", "days": [1, 2]}"#,
                    #"{"zone": "UTC", "exact": true, "offset": null}"#,
                ], "\(parsed.calls.map(\.arguments))")
        }
    }
}
