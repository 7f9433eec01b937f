import Engine

/// One generated token's log-probability in chat's shape (`token`, `logprob`, `bytes`,
/// `top_logprobs`), as the Responses API shows it on `output_text` parts and their events and
/// the native API on snapshots and final bodies. Codable: a response's record keeps them, so a
/// stored or resumed stream carries the same entries.
struct LogprobEntryBody: Codable, Sendable, Equatable {
    struct Alternative: Codable, Sendable, Equatable {
        var token: String
        var logprob: Float
        var bytes: [UInt8]
    }

    var token: String
    var logprob: Float
    var bytes: [UInt8]
    var topLogprobs: [Alternative]

    init(_ e: TokenLogprob) {
        token = String(decoding: e.bytes, as: UTF8.self)
        logprob = OpenAILogprobs.finite(e.logprob)
        bytes = e.bytes
        topLogprobs = e.top.map {
            Alternative(
                token: String(decoding: $0.bytes, as: UTF8.self), logprob: OpenAILogprobs.finite($0.logprob),
                bytes: $0.bytes)
        }
    }

    enum CodingKeys: String, CodingKey {
        case token, logprob, bytes
        case topLogprobs = "top_logprobs"
    }

    /// The entries of the tokens spelling `text`, the answer as sent (a stop string's left out).
    static func answer(_ recorder: LogprobRecorder, text: String) -> [LogprobEntryBody] {
        OpenAILogprobs.covering(recorder.all, text: text).map(LogprobEntryBody.init)
    }

    /// The entries whose last byte falls in bytes `start..<end` of the text they spell (the
    /// first range also takes entries of no bytes at its start): each entry goes with the delta
    /// that completes it.
    static func slice(_ entries: [LogprobEntryBody], _ start: Int, _ end: Int) -> [LogprobEntryBody] {
        var out: [LogprobEntryBody] = []
        var at = 0
        for e in entries {
            at += e.bytes.count
            if at > end { break }
            if at > start || (start == 0 && at == 0) { out.append(e) }
        }
        return out
    }
}
