import HTTPServer
import Sessions
import Testing

@testable import InferdServer

/// The per-key quotas' decisions, without I/O: what one key may hold, and that making room only
/// ever gives up the key's own finished responses.
@Suite struct TenantQuotaTests {
    let quota = TenantQuota(
        storedResponsesPerKey: 3, storedResponsesTotal: 10, backgroundResponsesPerKey: 2, sessionsPerKey: 2,
        itemBytes: 8, transcriptBytes: 20)

    func held(_ owned: Int, unfinished: Int = 0, total: Int? = nil) -> ResponseHoldings {
        ResponseHoldings(owned: owned, ownedUnfinished: unfinished, total: total ?? owned)
    }

    @Test func aKeyStoresPastItsQuotaOnlyByGivingUpItsOwnFinishedResponses() {
        #expect(quota.admitStoredResponse(held(0)) == nil)
        // At its quota with finished ones: admitted, and its own oldest finished one goes.
        #expect(quota.admitStoredResponse(held(3, unfinished: 2)) == nil)
        #expect(quota.evictions(after: held(4, unfinished: 3)) == 1)
        #expect(quota.evictions(after: held(3, unfinished: 1)) == 0)
        // Every one still running: nothing of its own to give up, refused.
        let refusal = quota.admitStoredResponse(held(3, unfinished: 3))
        #expect(refusal?.quota == "max_stored_responses_per_key" && refusal?.limit == 3 && refusal?.held == 3)
        #expect(refusal?.code == .quotaExceeded)
    }

    @Test func theTotalNeverMakesAKeyEvictAnotherKeysResponses() {
        // The store is full of other keys' responses: a key with none of its own is refused...
        let full = quota.admitStoredResponse(held(0, total: 10))
        #expect(full?.quota == "max_stored_responses" && full?.limit == 10)
        // ...and one with a finished one of its own gives that one up, never another key's.
        #expect(quota.admitStoredResponse(held(2, unfinished: 1, total: 10)) == nil)
        #expect(quota.evictions(after: held(3, unfinished: 2, total: 11)) == 1)
        // However far over the total, never more than its own finished ones.
        #expect(quota.evictions(after: held(3, unfinished: 2, total: 15)) == 1)
        #expect(quota.evictions(after: held(1, unfinished: 1, total: 15)) == 0)
    }

    @Test func backgroundResponsesSessionsAndTranscriptsAreCountedPerKey() {
        #expect(quota.admitBackgroundResponse(running: 1) == nil)
        #expect(quota.admitBackgroundResponse(running: 2)?.quota == "max_background_responses_per_key")
        #expect(quota.admitSession(held: 1) == nil)
        let sessions = quota.admitSession(held: 2)
        #expect(sessions?.quota == "max_sessions_per_key" && sessions?.code == .sessionLimit)
        #expect(quota.admitTranscript(bytes: 12, adding: 8) == nil)
        let transcript = quota.admitTranscript(bytes: 12, adding: 9)
        #expect(transcript?.quota == "max_transcript_bytes" && transcript?.limit == 20 && transcript?.held == 12)
    }

    @Test func aMessageIsMeasuredInUTF8Bytes() throws {
        try quota.checkItem("12345678", field: "prompt")
        // Four characters, eight bytes: fits; one more byte does not.
        try quota.checkItem("éééé", field: "prompt")
        #expect(throws: TenantQuota.ItemTooLarge(field: "items[0].content", bytes: 9, limit: 8)) {
            try quota.checkItem("éééé!", field: "items[0].content")
        }
    }

    @Test func refusalsAre429NamingTheQuotaAndItsLimit() {
        let e = HTTPError(TenantQuota.Refusal(quota: "max_transcript_bytes", limit: 20, held: 12, what: "bytes"))
        #expect(e.status == 429 && e.code == .quotaExceeded && e.param == "max_transcript_bytes")
        #expect(e.type == "insufficient_quota" && e.message.contains("max_transcript_bytes is 20"))
        let big = HTTPError(TenantQuota.ItemTooLarge(field: "prompt", bytes: 9, limit: 8))
        #expect(big.status == 413 && big.code == .payloadTooLarge && big.param == "prompt")
    }

    @Test func startUpRefusesQuotasThatContradictEachOther() throws {
        var c = ServerConfiguration()
        try c.checkQuotas()
        #expect(c.tenantQuota.itemBytes == 262_144 && c.tenantQuota.transcriptBytes == 1_048_576)
        #expect(c.tenantQuota.storedResponsesPerKey == 1000 && c.tenantQuota.backgroundResponsesPerKey == 8)
        c.maxItemBytes = c.maxTranscriptBytes + 1
        #expect(throws: ConfigurationError.self) { try c.checkQuotas() }
        c = ServerConfiguration()
        c.maxStoredResponsesPerKey = c.maxStoredResponses + 1
        let error = #expect(throws: ConfigurationError.self) { try c.checkQuotas() }
        #expect(error?.description.contains("max_stored_responses_per_key") == true)
        let zero = #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.load(
                arguments: ["--max-background-responses-per-key", "0"], environment: [:],
                defaultFile: "/nonexistent.json")
        }
        #expect(zero?.description.contains("at least 1") == true)
    }
}
