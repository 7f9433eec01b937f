import Foundation
import GenerationVocabulary
import Telemetry

/// Reads an OpenAI-style SSE stream (`data: {chunk}` events, `data: [DONE]` at the end) of a chat
/// or text completion, line by line, into the accumulated answer, its finish reason and usage.
/// Anything that is not SSE, or data that is not a chunk, stops it with a `failure`.
///
/// `content` is the answer as inferd's snapshots carry it, one text: the upstream's reasoning
/// (`delta.reasoning_content`) as a leading `<think>…</think>`, its text, then its calls
/// (`delta.tool_calls`) in the `generic` format's markup, `{"tool_calls": [{"name": …,
/// "arguments": …}]}`, after a line break. The markup grows as the fragments come (a call's
/// object closes when the next one starts, the list and `</think>` once something follows or the
/// stream finished), so each snapshot extends the last in the usual order (reasoning, text,
/// calls) and the server reads it with the same parser as a local model's answer.
struct OpenAIStreamDecoder {
    /// The upstream's text alone (what a structured-output check reads).
    private(set) var answer = ""
    private(set) var reasoning = ""
    /// The calls so far, in the order of their `index`; `arguments` as the fragments joined.
    private(set) var calls: [(index: Int, id: String, name: String, arguments: String)] = []
    /// The stream ended (`finish_reason` or `[DONE]`): open markup is closed, unless the answer
    /// was cut off (`length`), whose last call stays open and so is no call.
    private var ended = false
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
    mutating func finish() -> Step {
        let step = data.isEmpty ? Step.none : dispatch()
        guard step != .stop else { return step }
        return end() || step == .grew ? .grew : .none
    }

    /// Marks the stream ended; true when that closed markup (the snapshot grew).
    private mutating func end() -> Bool {
        guard !ended else { return false }
        let before = content
        ended = true
        return content != before
    }

    /// The answer as one text (see the type's comment).
    var content: String {
        var text = ""
        if !reasoning.isEmpty {
            text = "<think>" + reasoning
            if ended || !answer.isEmpty || !calls.isEmpty { text += "</think>" }
        }
        text += answer
        guard !calls.isEmpty else { return text }
        if !text.isEmpty { text += "\n" }
        let closes = ended && finishReason != "length"
        text += #"{"tool_calls": ["#
        for (i, call) in calls.enumerated() {
            if i > 0 { text += ", " }
            text += #"{"name": "# + Logger.jsonString(call.name) + #", "arguments": "#
            let last = i == calls.count - 1
            if !last || closes {
                text += (call.arguments.isEmpty ? "{}" : call.arguments) + "}"
            } else {
                text += call.arguments
            }
        }
        if closes { text += "]}" }
        return text
    }

    private mutating func dispatch() -> Step {
        guard !data.isEmpty else { return .none }
        let payload = data.joined(separator: "\n")
        data.removeAll()
        if payload == "[DONE]" {
            done = true
            return end() ? .grew : .none
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
            let delta = choice["delta"] as? [String: Any]
            // vLLM and llama.cpp's server name it reasoning_content; newer vLLM also reasoning.
            let thought = delta?["reasoning_content"] as? String ?? delta?["reasoning"] as? String
            if let thought, !thought.isEmpty {
                reasoning += thought
                deltas += 1
                grew = true
            }
            let piece = delta?["content"] as? String ?? choice["text"] as? String
            if let piece, !piece.isEmpty {
                answer += piece
                deltas += 1
                grew = true
            }
            for call in delta?["tool_calls"] as? [[String: Any]] ?? [] {
                if !add(call) { return .stop }
                grew = true
            }
            if let reason = choice["finish_reason"] as? String {
                finishReason = reason
                if end() { grew = true }
            }
        }
        return grew ? .grew : .none
    }

    /// One `delta.tool_calls` element: a new call (its `index` not seen yet, with `id` and
    /// `function.name`) or more of an open call's `function.arguments`. False (with `failure`)
    /// when it cannot be placed: a new call without a name, or a fragment for an earlier call.
    private mutating func add(_ call: [String: Any]) -> Bool {
        let function = call["function"] as? [String: Any]
        let index = call["index"] as? Int ?? calls.last?.index ?? 0
        let fragment = function?["arguments"] as? String ?? ""
        deltas += 1
        if let last = calls.last, last.index == index {
            calls[calls.count - 1].arguments += fragment
            if let id = call["id"] as? String, last.id.isEmpty { calls[calls.count - 1].id = id }
            return true
        }
        guard !calls.contains(where: { $0.index == index }) else {
            failure = "malformed tool call stream: arguments for call \(index) after a later call started"
            return false
        }
        guard let name = function?["name"] as? String, !name.isEmpty else {
            failure = "malformed tool call stream: call \(index) starts without a function name"
            return false
        }
        calls.append((index, call["id"] as? String ?? "", name, fragment))
        return true
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
