import GenerationVocabulary
import Telemetry

/// How many generations each tenant (an API key's owner) holds, running or waiting, against one
/// limit, as pure state: a tenant at its limit is refused, so one key can never take every place
/// and another key's request still finds room. Time comes in as durations, so it is tested
/// without a clock. The tenant "" (no API keys: everyone together) is never limited.
public struct TenantShares: Sendable, Equatable {
    /// Most generations one tenant holds at once; 0: no limit.
    public let limit: Int
    private(set) var holding: [String: Int] = [:]
    /// Mean time a generation is held (submitted to ended), smoothed; nil until one has ended.
    private var meanHold: Duration?

    public init(limit: Int) { self.limit = max(0, limit) }

    /// Generations `tenant` holds now.
    public func holding(_ tenant: String) -> Int { holding[tenant] ?? 0 }

    /// Whether `tenant` may start one more; nothing changes.
    public func check(_ tenant: String) throws(GenerationError) {
        let n = holding(tenant)
        guard limit == 0 || tenant.isEmpty || n < limit else {
            throw .tenantBusy(holding: n, limit: limit, retryAfterSeconds: retryAfterSeconds)
        }
    }

    /// Counts one more generation of `tenant`, or refuses it (`tenantBusy`) at its limit.
    public mutating func acquire(_ tenant: String) throws(GenerationError) {
        try check(tenant)
        holding[tenant, default: 0] += 1
    }

    /// One of `tenant`'s generations ended after being held for `held`.
    public mutating func release(_ tenant: String, held: Duration) {
        let n = holding(tenant) - 1
        holding[tenant] = n > 0 ? n : nil
        // Smoothed so one unusually long or short generation moves the estimate only a little.
        meanHold = meanHold.map { $0 * 0.8 + held * 0.2 } ?? held
    }

    /// Seconds until one of a full tenant's generations is likely to end: the mean time one is
    /// held divided by the limit, rounded up, between 1 and 60.
    public var retryAfterSeconds: Int {
        let seconds = ((meanHold ?? .seconds(4)) / max(1, limit)).inSeconds.rounded(.up)
        return Int(min(max(seconds, 1), 60))
    }
}
