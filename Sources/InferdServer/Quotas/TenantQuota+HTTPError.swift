import HTTPServer

extension HTTPError {
    /// 429 naming the quota (`param` is the setting's name) and its limit. OpenAI's type for a
    /// quota: `insufficient_quota`; retrying does not help until the key holds less.
    init(_ r: TenantQuota.Refusal) {
        self.init(
            status: 429,
            message:
                "quota exceeded: \(r.quota) is \(r.limit) and this API key (without api_keys: all callers together) holds \(r.held) \(r.what); delete some first",
            type: "insufficient_quota", code: r.code, param: r.quota)
    }

    /// 413 naming the field that holds the message too large.
    init(_ e: TenantQuota.ItemTooLarge) {
        self = .payloadTooLarge(
            "\(e.field) is \(e.bytes) bytes; this server stores at most \(e.limit) (max_item_bytes)")
        param = e.field
    }
}
