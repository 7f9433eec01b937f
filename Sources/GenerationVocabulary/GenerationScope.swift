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
}
