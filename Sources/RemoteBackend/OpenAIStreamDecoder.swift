import Foundation
import GenerationVocabulary

/// Reads an OpenAI-style SSE stream (`data: {chunk}` events, `data: [DONE]` at the end) of a chat
/// or text completion, line by line, into the accumulated answer, its finish reason and usage.
/// Anything that is not SSE, or data that is not a chunk, stops it with a `failure`.
struct OpenAIStreamDecoder {
    private(set) var content = ""
    /// Non-empty content deltas received (the completion's token count when no usage comes).
    private(set) var deltas = 0
    private(set) var finishReason: String?
    private(set) var usage: (prompt: Int, completion: Int, cached: Int)?
    private(set) var done = false
    private(set) var failure: String?
    private var data: [String] = []

    enum Step {
        /// Nothing visible changed.
        case none
        /// The answer grew.
        case grew
        /// The decoder failed (see `failure`); stop reading.
        case stop
    }

    mutating func feed(_ line: String) -> Step {
        if line.isEmpty { return dispatch() }
        if line.hasPrefix(":") { return .none }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = line[...]
            value = ""
        }
        switch field {
        case "data": data.append(String(value))
        case "event", "id", "retry": break
        default:
            failure = "malformed event stream: a line that is not an SSE field (\(line.prefix(80)))"
            return .stop
        }
        return .none
    }

    /// The end of the body: an event not followed by a blank line still counts.
    mutating func finish() -> Step { data.isEmpty ? .none : dispatch() }

    private mutating func dispatch() -> Step {
        guard !data.isEmpty else { return .none }
        let payload = data.joined(separator: "\n")
        data.removeAll()
        if payload == "[DONE]" {
            done = true
            return .none
        }
        guard !done else {
            failure = "malformed event stream: data after [DONE]"
            return .stop
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any] else {
            failure = "malformed event stream: an event's data is not a JSON object (\(payload.prefix(80)))"
            return .stop
        }
        if let error = object["error"] {
            let message = (error as? [String: Any])?["message"] as? String ?? "\(error)"
            failure = "the upstream reported an error mid-stream: \(message)"
            return .stop
        }
        if let u = object["usage"] as? [String: Any], let prompt = u["prompt_tokens"] as? Int,
            let completion = u["completion_tokens"] as? Int
        {
            let cached = (u["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int ?? 0
            usage = (prompt, completion, cached)
        }
        guard let choices = object["choices"] as? [[String: Any]] else {
            if object["usage"] != nil { return .none }
            failure = "malformed event stream: a chunk without choices"
            return .stop
        }
        var grew = false
        for choice in choices where (choice["index"] as? Int ?? 0) == 0 {
            let piece = (choice["delta"] as? [String: Any])?["content"] as? String ?? choice["text"] as? String
            if let piece, !piece.isEmpty {
                content += piece
                deltas += 1
                grew = true
            }
            if let reason = choice["finish_reason"] as? String { finishReason = reason }
        }
        return grew ? .grew : .none
    }

    /// The finish reason in inferd's terms.
    var finishedAs: FinishReason? {
        switch finishReason {
        case nil: nil
        case "length": .length
        case "cancelled": .cancelled
        default: .stop
        }
    }
}
