/// Whose work a generation is, as far as sharing goes. Work is reused between generations (a
/// kept KV prefix, a merged identical generation) only within one scope, so nothing of one
/// tenant's prompts shows in another's timing or `cached_tokens`; fair shares are kept per
/// tenant. Opaque to the engine: the server fills it from the API key.
public struct GenerationScope: Hashable, Sendable {
    /// The tenant: an API key's owner, "" when authentication is off (one tenant for all).
    public var tenant: String
    /// A partition within the tenant (a request's `cache_salt`): reuse only between requests
    /// with the same salt, for clients that share a key but not their prompts.
    public var cacheSalt: String?

    public init(tenant: String = "", cacheSalt: String? = nil) {
        self.tenant = tenant
        self.cacheSalt = cacheSalt
    }

    /// Everyone together: authentication off and no salt.
    public static let shared = GenerationScope()

    /// Whether this is the one scope of a server without keys and a request without salt.
    public var isShared: Bool { tenant.isEmpty && cacheSalt == nil }
}

/// Byte for byte, not Swift's `String` equality: that equates canonically equivalent strings
/// ("\u{E9}" and "e\u{301}"), so two salts a client treats as different would share a cache.
extension GenerationScope {
    public static func == (a: GenerationScope, b: GenerationScope) -> Bool {
        a.tenant.utf8.elementsEqual(b.tenant.utf8)
            && (a.cacheSalt?.utf8).map { s in b.cacheSalt.map { s.elementsEqual($0.utf8) } ?? false }
                ?? (b.cacheSalt == nil)
    }

    public func hash(into hasher: inout Hasher) {
        for byte in tenant.utf8 { hasher.combine(byte) }
        hasher.combine(0xFF as UInt8)  // never a UTF-8 byte: ends the tenant
        if let cacheSalt {
            hasher.combine(true)
            for byte in cacheSalt.utf8 { hasher.combine(byte) }
        } else {
            hasher.combine(false)
        }
    }
}
