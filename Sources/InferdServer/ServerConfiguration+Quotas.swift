extension ServerConfiguration {
    /// Per-key quotas (issue #39): what one API key may hold, so no key evicts or starves another's
    /// data. Without `api_keys` every caller is one tenant.
    static let quotaSettings: [Setting] = [
        int(
            "max_stored_responses_per_key",
            "Most stored /v1/responses one API key keeps; past it that key's own oldest finished are deleted (429 when none has finished).",
            \.maxStoredResponsesPerKey, min: 1),
        int(
            "max_background_responses_per_key",
            "Most background /v1/responses one API key runs at once on this server; one more gets 429 quota_exceeded.",
            \.maxBackgroundResponsesPerKey, min: 1),
        int(
            "max_item_bytes",
            "Largest stored message in bytes (session instructions and prompts, conversation items, stored response input); larger gets 413.",
            \.maxItemBytes, min: 1),
        int(
            "max_transcript_bytes",
            "Most bytes one session's transcript holds before a turn or item is added; more gets 429 quota_exceeded.",
            \.maxTranscriptBytes, min: 1),
    ]

    /// The quotas every route checks, as one pure value.
    var tenantQuota: TenantQuota {
        TenantQuota(
            storedResponsesPerKey: maxStoredResponsesPerKey, storedResponsesTotal: maxStoredResponses,
            backgroundResponsesPerKey: maxBackgroundResponsesPerKey, sessionsPerKey: maxSessionsPerKey,
            itemBytes: maxItemBytes, transcriptBytes: maxTranscriptBytes)
    }

    /// Checked at start-up: settings that would contradict one another.
    func checkQuotas() throws(ConfigurationError) {
        guard maxItemBytes <= maxTranscriptBytes else {
            throw ConfigurationError(
                "max_item_bytes (\(maxItemBytes)) must not exceed max_transcript_bytes (\(maxTranscriptBytes)): no session could hold one such item"
            )
        }
        guard maxStoredResponsesPerKey <= maxStoredResponses else {
            throw ConfigurationError(
                "max_stored_responses_per_key (\(maxStoredResponsesPerKey)) must not exceed max_stored_responses (\(maxStoredResponses))"
            )
        }
    }
}
