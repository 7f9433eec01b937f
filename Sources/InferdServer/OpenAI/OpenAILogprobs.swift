import Engine
import Telemetry

/// What a chat or text completion asked of log-probabilities: alternatives per token (chat's
/// `top_logprobs`, 0–20; completions' `logprobs`, 0–20) and which distribution (the
/// `logprobs_mode` extension, vLLM's names: `processed_logprobs`, the default, or `raw_logprobs`).
struct LogprobAsk: Sendable, Equatable {
    var top: Int
    var distribution: LogprobRecorder.Distribution

    /// `logprobs_mode`; nil when absent.
    static func mode(_ f: OpenAIFields) throws(OpenAIError) -> LogprobRecorder.Distribution? {
        guard let name = try f.string("logprobs_mode") else { return nil }
        switch name {
        case "processed_logprobs": return .processed
        case "raw_logprobs": return .raw
        default:
            throw .invalid(
                "logprobs_mode '\(name.prefix(40))' is not one of processed_logprobs, raw_logprobs",
                param: "logprobs_mode")
        }
    }

    /// A number of alternatives in 0...20, else 400 naming `field`.
    static func top(_ f: OpenAIFields, _ field: String) throws(OpenAIError) -> Int? {
        guard let n = try f.int(field) else { return nil }
        guard (0...LogprobRecorder.maxTop).contains(n) else {
            throw .invalid("\(field) must be between 0 and \(LogprobRecorder.maxTop), got \(n)", param: field)
        }
        return n
    }

    func recorder(scoresPrompt: Bool = false) -> LogprobRecorder {
        LogprobRecorder(top: top, distribution: distribution, scoresPrompt: scoresPrompt)
    }
}

/// Log-probability entries as OpenAI's two shapes show them: chat's `{"content": [{"token",
/// "logprob", "bytes", "top_logprobs"}]}` and completions' legacy `{"tokens", "token_logprobs",
/// "top_logprobs", "text_offset"}`. A token's `token` is its bytes as text (a token holding part
/// of a character shows U+FFFD there; `bytes` are exact).
enum OpenAILogprobs {
    /// The entries of the tokens that make up `text` (the answer as sent): those of a stop
    /// string, which the answer does not show, are left out.
    static func covering(_ entries: [TokenLogprob], text: String) -> [TokenLogprob] {
        var bytes = 0
        let limit = text.utf8.count
        var out: [TokenLogprob] = []
        for e in entries {
            guard bytes < limit || e.bytes.isEmpty else { break }
            out.append(e)
            bytes += e.bytes.count
        }
        return out
    }

    /// Chat's `logprobs` object.
    struct Chat: Encodable, Sendable {
        var content: [LogprobEntryBody]

        init(_ entries: [TokenLogprob]) { content = entries.map(LogprobEntryBody.init) }

        enum CodingKeys: String, CodingKey { case content, refusal }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(content, forKey: .content)
            try c.encodeNil(forKey: .refusal)
        }
    }

    /// Completions' legacy `logprobs` object; `offset` is where these tokens' text starts in the
    /// choice's text (characters, as OpenAI counts them). With an echoed `prompt`, its tokens come
    /// first (the first with `null`s: nothing comes before it) and the offsets run on from them.
    struct Legacy: Encodable, Sendable {
        var tokens: [String] = []
        var tokenLogprobs: [Float?] = []
        var topLogprobs: [[String: Float]?] = []
        var textOffset: [Int] = []
        private var at: Int
        private var pending: [UInt8] = []

        init(_ entries: [TokenLogprob], offset: Int = 0, prompt: PromptLogprobs? = nil) {
            at = offset
            if let prompt {
                add(prompt.firstBytes, logprob: nil, top: nil)
                for e in prompt.scored { add(e.bytes, logprob: e.logprob, top: e.top) }
            }
            for e in entries { add(e.bytes, logprob: e.logprob, top: e.top) }
        }

        private mutating func add(_ bytes: [UInt8], logprob: Float?, top alternatives: [TokenLogprob.Alternative]?) {
            tokens.append(String(decoding: bytes, as: UTF8.self))
            tokenLogprobs.append(logprob.map(OpenAILogprobs.finite))
            topLogprobs.append(
                alternatives.map { list in
                    var top: [String: Float] = [:]
                    for alt in list {
                        // Two tokens spelling the same text keep the likelier (listed first).
                        let key = String(decoding: alt.bytes, as: UTF8.self)
                        if top[key] == nil { top[key] = OpenAILogprobs.finite(alt.logprob) }
                    }
                    return top
                })
            textOffset.append(at)
            // Characters completed so far (a token may end inside one).
            pending += bytes
            if let complete = String(validating: pending, as: UTF8.self) {
                at += complete.count
                pending.removeAll()
            }
        }

        enum CodingKeys: String, CodingKey {
            case tokens
            case tokenLogprobs = "token_logprobs"
            case topLogprobs = "top_logprobs"
            case textOffset = "text_offset"
        }
    }

    /// JSON has no infinity: an impossible token's log-probability is sent as -9999 (as OpenAI's
    /// API does for tokens it never samples).
    static func finite(_ x: Float) -> Float { x.isFinite ? x : -9999 }
}

/// Which entries a stream has sent: each chunk carries those written since the last one sent, so
/// a snapshot that brought no new text leaves its tokens to the next chunk.
final class LogprobCursor: Sendable {
    let recorder: LogprobRecorder
    private let sent = Locked(0)

    init(_ recorder: LogprobRecorder) { self.recorder = recorder }

    /// The entries up to `count` not sent yet; they count as sent from now on.
    func take(upTo count: Int) -> [TokenLogprob] {
        let range = sent.withLock { s -> Range<Int> in
            let r = s..<max(s, count)
            s = r.upperBound
            return r
        }
        return range.isEmpty ? [] : recorder.entries(range)
    }

    /// At the end: the entries not sent yet among those making up `text` (the answer as sent);
    /// all count as sent from now on.
    func rest(covering text: String) -> [TokenLogprob] {
        let covered = OpenAILogprobs.covering(recorder.all, text: text)
        let from = sent.withLock { s -> Int in
            defer { s = Int.max }
            return s
        }
        return from < covered.count ? Array(covered[from...]) : []
    }
}
