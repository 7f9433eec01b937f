import HTTPServer
import Sessions

/// What one API key (a tenant; without `api_keys`, every caller together, owner nil) may hold,
/// and the pure decisions over it: given what the key holds now, admit or refuse the next thing,
/// and how many of the key's *own* oldest finished stored responses make room. Nothing here
/// reads a store or a clock; the routes count, ask, and act. A refusal never touches another
/// key's data: no quota is met by evicting someone else's responses, sessions or items.
struct TenantQuota: Sendable, Equatable {
    /// `max_stored_responses_per_key`: stored responses one key keeps; past it the key's own
    /// oldest finished ones are deleted, and when none of its own has finished, one more is refused.
    var storedResponsesPerKey: Int
    /// `max_stored_responses`: stored responses of all keys together. Reaching it never evicts
    /// another key's: a key may still store by giving up one of its own finished ones, else it is refused.
    var storedResponsesTotal: Int
    /// `max_background_responses_per_key`: background responses one key runs at once (per replica).
    var backgroundResponsesPerKey: Int
    /// `max_sessions_per_key`: sessions (conversations are sessions) one key holds.
    var sessionsPerKey: Int
    /// `max_item_bytes`: UTF-8 bytes of one stored message (instructions, a prompt, an item).
    var itemBytes: Int
    /// `max_transcript_bytes`: UTF-8 bytes of one session's transcript before a turn or an item is added.
    var transcriptBytes: Int

    /// A key over one of its quotas: which (the setting's name), its limit, and what the key holds.
    struct Refusal: Error, Sendable, Equatable {
        var quota: String
        var limit: Int
        var held: Int
        /// What was refused, for the message ("stored responses").
        var what: String
        var code: ErrorCode = .quotaExceeded
    }

    /// One message over `max_item_bytes`: the request field that holds it and its size.
    struct ItemTooLarge: Error, Sendable, Equatable {
        var field: String
        var bytes: Int
        var limit: Int
    }

    /// Whether the key may store one more response, given what it and the store hold now.
    func admitStoredResponse(_ h: ResponseHoldings) -> Refusal? {
        // Its own finished ones make room; its running ones cannot.
        if h.ownedUnfinished >= storedResponsesPerKey {
            return Refusal(
                quota: "max_stored_responses_per_key", limit: storedResponsesPerKey, held: h.ownedUnfinished,
                what: "unfinished stored responses")
        }
        if h.total >= storedResponsesTotal, h.ownedFinished == 0 {
            return Refusal(
                quota: "max_stored_responses", limit: storedResponsesTotal, held: h.total,
                what: "stored responses on this server (no finished one of this key's own to give up)")
        }
        return nil
    }

    /// After one more was stored: how many of the key's own oldest finished responses to delete so
    /// that it is within its quota and, as far as its own allow, the store within its total.
    func evictions(after h: ResponseHoldings) -> Int {
        let wanted = max(0, h.owned - storedResponsesPerKey, h.total - storedResponsesTotal)
        return min(wanted, h.ownedFinished)
    }

    /// Whether the key may start one more background response while `running` of its own run.
    func admitBackgroundResponse(running: Int) -> Refusal? {
        guard running >= backgroundResponsesPerKey else { return nil }
        return Refusal(
            quota: "max_background_responses_per_key", limit: backgroundResponsesPerKey, held: running,
            what: "background responses running")
    }

    /// Whether the key may create one more session (or conversation) while it holds `held`.
    func admitSession(held: Int) -> Refusal? {
        guard held >= sessionsPerKey else { return nil }
        return Refusal(
            quota: "max_sessions_per_key", limit: sessionsPerKey, held: held, what: "sessions and conversations",
            code: .sessionLimit)
    }

    /// Whether a transcript of `bytes` may take `adding` more (a prompt, items); `of` names it.
    func admitTranscript(bytes: Int, adding: Int, of transcript: String = "this session's transcript") -> Refusal? {
        guard bytes + adding > transcriptBytes else { return nil }
        return Refusal(
            quota: "max_transcript_bytes", limit: transcriptBytes, held: bytes,
            what: "bytes in \(transcript) (\(adding) more asked)")
    }

    /// Whether one message of `text`, held in request field `field`, fits `max_item_bytes`.
    func checkItem(_ text: String, field: String) throws(ItemTooLarge) {
        let bytes = text.utf8.count
        guard bytes <= itemBytes else { throw ItemTooLarge(field: field, bytes: bytes, limit: itemBytes) }
    }
}
