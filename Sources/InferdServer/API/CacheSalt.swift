import HTTPServer

/// `cache_salt`: a request's partition of its API key's cache scope (as vLLM offers). Kept KV
/// prefixes and merged generations are shared only between requests with the same key and the
/// same salt, so clients sharing a key can keep their prompts from showing in each other's
/// `cached_tokens` or timing. A non-empty string of at most `maxBytes` UTF-8 bytes without
/// control characters, compared byte for byte (`GenerationScope`); a session turn has its own KV
/// cache and refuses it.
enum CacheSalt {
    static let field = "cache_salt"
    /// In UTF-8 bytes: a count of characters would let one "character" carry any number of
    /// combining marks.
    static let maxBytes = 256

    /// The checked salt, or why not (a message naming the field).
    static func check(_ salt: String) -> String? {
        if salt.isEmpty { return "cache_salt must not be empty (omit it to share the key's cache)" }
        if salt.utf8.count > maxBytes { return "cache_salt must be at most \(maxBytes) bytes (UTF-8)" }
        if salt.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "cache_salt must not contain control characters"
        }
        return nil
    }

    /// From an OpenAI-style body (chat, completions, Responses).
    static func read(_ f: OpenAIFields) throws(OpenAIError) -> String? {
        guard let salt = try f.string(field) else { return nil }
        if let why = check(salt) { throw .invalid(why, param: field) }
        return salt
    }

    /// From a native body (`/v1/generations`).
    static func read(_ f: NativeFields) throws(HTTPError) -> String? {
        guard let salt = try f.string(field) else { return nil }
        if let why = check(salt) { throw .badRequest(why, code: .invalidValue, param: field) }
        return salt
    }

    /// A session turn (or a conversation's) continues its own KV cache: a salt would promise a
    /// partition that does not apply.
    static let refusedForSessions = "cache_salt applies to stateless requests; a session keeps its own KV cache"
}
