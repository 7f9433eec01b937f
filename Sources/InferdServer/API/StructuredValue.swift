import Engine
import StructuredOutput

/// The `value` of a structured answer's terminal event: validated (`partial: false`) only when
/// the answer ended where its grammar allows and parses as JSON; otherwise (cut by `max_tokens`,
/// cancelled, timed out) the last partial value, never a repaired one.
enum StructuredValue {
    static func final(_ result: GenerationResult) -> (value: JSONValue?, partial: Bool) {
        if result.constraintSatisfied == true, let v = try? JSONParser.parse(result.content) {
            return (v, false)
        }
        return (PartialJSON.value(result.content), true)
    }
}
