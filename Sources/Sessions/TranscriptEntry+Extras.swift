import Foundation
import GenerationVocabulary

extension TranscriptEntry {
    /// What an entry holds beyond its text (calls, the call answered, reasoning), as the stores
    /// keep it: one JSON column (`extras`, sorted keys), NULL for the plain entries that are most
    /// of a transcript. One column rather than three, so the next such field needs no migration.
    struct Extras: Codable, Equatable {
        var toolCalls: [ToolCall]?
        var toolCallID: String?
        var reasoning: String?

        enum CodingKeys: String, CodingKey {
            case toolCalls = "tool_calls"
            case toolCallID = "tool_call_id"
            case reasoning
        }
    }

    /// The `extras` column's text; nil when the entry has none.
    var extrasJSON: String? {
        guard toolCalls != nil || toolCallID != nil || reasoning != nil else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let extras = Extras(toolCalls: toolCalls, toolCallID: toolCallID, reasoning: reasoning)
        // Strings and arrays of strings always encode.
        return String(decoding: try! encoder.encode(extras), as: UTF8.self)
    }

    /// Takes the fields of a stored `extras` column. A value this build cannot read (written by a
    /// newer one) leaves them empty rather than failing the whole transcript.
    mutating func readExtras(_ json: String?) {
        guard let json, let e = try? JSONDecoder().decode(Extras.self, from: Data(json.utf8)) else { return }
        toolCalls = e.toolCalls
        toolCallID = e.toolCallID
        reasoning = e.reasoning
    }
}
