import Engine
import StructuredOutput

/// The `value` of a structured answer's terminal event: validated (`partial: false`) only when
/// the answer ended where its grammar allows and parses as JSON; otherwise (cut by `max_tokens`,
/// cancelled, timed out) the last partial value, never a repaired one.
enum StructuredValue {
    static func final(_ outcome: GenerationOutcome) -> (value: JSONValue?, partial: Bool) {
        final(content: outcome.content, satisfied: outcome.constraintSatisfied)
    }

    /// The same from an answer's text and whether it ended where its grammar allows.
    static func final(content: String, satisfied: Bool?) -> (value: JSONValue?, partial: Bool) {
        if satisfied == true, let v = try? JSONParser.parse(content) {
            return (v, false)
        }
        return (PartialJSON.value(content), true)
    }
}
