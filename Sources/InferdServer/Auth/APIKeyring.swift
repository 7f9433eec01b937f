import Foundation

/// The accepted API keys, kept only as SHA-256 digests so that a comparison takes the same time
/// whichever key (or how much of one) a caller guessed, and so that no key sits in memory in a
/// form a log line could leak.
public struct APIKeyring: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        let digest: [UInt8]
        /// First 8 hex digits of the digest: names the key in logs and metrics.
        let id: String
    }

    let entries: [Entry]
    /// True when no key can ever match (the keys could not be read): fail closed.
    let denyAll: Bool

    public init(keys: [String]) {
        entries = keys.map { key in
            let digest = SHA256.hash(Array(key.utf8))
            return Entry(digest: digest, id: SHA256.hex(Array(digest.prefix(4))))
        }
        denyAll = false
    }

    private init(denyAll: Bool) {
        entries = []
        self.denyAll = denyAll
    }

    /// A keyring that refuses everything: what a server whose key file went missing must do.
    public static let refuseAll = APIKeyring(denyAll: true)

    /// True when requests must carry a key.
    public var isEnabled: Bool { denyAll || !entries.isEmpty }

    /// The matching key's identity, or nil. Every entry is compared in full, without early exit.
    public func identify(_ presented: String) -> APIKeyIdentity? {
        let digest = SHA256.hash(Array(presented.utf8))
        var found: Int = -1
        for (index, entry) in entries.enumerated() {
            var difference: UInt8 = 0
            for i in 0..<32 { difference |= entry.digest[i] ^ digest[i] }
            // Branch-free select: found becomes index when difference is 0.
            let isMatch = Int(difference == 0 ? 1 : 0)
            found = isMatch * index + (1 - isMatch) * found
        }
        guard found >= 0, !denyAll else { return nil }
        return APIKeyIdentity(id: entries[found].id, owner: SHA256.hex(entries[found].digest))
    }

    /// The short id of any key, known or not (for logging refused attempts).
    public static func keyID(_ key: String) -> String { SHA256.hex(Array(SHA256.hash(Array(key.utf8)).prefix(4))) }

    /// Reads the `api_keys` setting: "" (none), "k1,k2,…", or "@/path" (one key per line; blank
    /// lines and lines starting with # are skipped). Spaces around keys are dropped. A setting
    /// that is not empty yet yields no key (" ", ",", an empty file) is refused.
    public static func parse(_ setting: String, name: String = "api_keys") throws(ConfigurationError) -> [String] {
        let text: String
        if setting.hasPrefix("@") {
            let path = String(setting.dropFirst())
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("\(name): cannot read key file \(path)")
            }
            text = String(decoding: data, as: UTF8.self)
            let keys = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            guard !keys.isEmpty else { throw ConfigurationError("\(name): key file \(path) holds no key") }
            return try validated(keys, name: name)
        }
        let keys = setting.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        // A setting that was given but holds no key (" ", ",") must not switch authentication off:
        // only the empty setting means "no keys".
        guard !keys.isEmpty || setting.isEmpty else {
            throw ConfigurationError(
                "\(name) is set but holds no key (only spaces and commas); leave it empty to run without keys")
        }
        return try validated(keys, name: name)
    }

    private static func validated(_ keys: [String], name: String) throws(ConfigurationError) -> [String] {
        for (i, key) in keys.enumerated() {
            // Printable ASCII without spaces: what fits in an Authorization header unchanged.
            guard key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }), !key.contains(",") else {
                throw ConfigurationError("\(name): key \(i + 1) has characters other than printable ASCII")
            }
            guard key.utf8.count >= 16 else {
                throw ConfigurationError("\(name): key \(i + 1) is shorter than 16 characters")
            }
        }
        return keys
    }
}

/// Who a request authenticated as. Never holds the key itself.
public struct APIKeyIdentity: Sendable, Equatable {
    /// 8 hex digits naming the key in logs.
    public let id: String
    /// The full SHA-256 of the key in hex: what owns sessions (no collisions between keys).
    public let owner: String
}

extension ServerConfiguration {
    /// The keyring for `api_keys`, and the one for `metrics_api_key` (nil: none set).
    public func keyrings() throws(ConfigurationError) -> (api: APIKeyring, metrics: APIKeyring?) {
        let api = APIKeyring(keys: try APIKeyring.parse(apiKeys))
        let metrics =
            metricsAPIKey.isEmpty
            ? nil : APIKeyring(keys: try APIKeyring.parse(metricsAPIKey, name: "metrics_api_key"))
        return (api, metrics)
    }
}

extension ServerConfiguration {
    /// True when `host` can only be reached from this machine (127.0.0.0/8, ::1, localhost): the
    /// one place where running without API keys is not an exposure worth a warning.
    public var listensOnLoopbackOnly: Bool {
        let host = host.trimmingCharacters(in: .whitespaces).lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        var v4 = in_addr()
        guard inet_pton(AF_INET, host, &v4) == 1 else { return false }
        return UInt32(bigEndian: v4.s_addr) >> 24 == 127
    }
}
