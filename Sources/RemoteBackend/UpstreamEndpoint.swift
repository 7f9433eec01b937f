/// One upstream as configured: its base URL, its share of the traffic and its place limit.
///
/// Written `URL` or `URL#weight=3&max_active=4`. The options live in the URL's fragment because a
/// fragment is never sent to a server (RFC 3986 §3.5: it is resolved by the client), so no
/// upstream's URL can need one and the syntax cannot clash with a path, a query or a port.
/// Several upstreams are separated by commas (a comma inside a URL is written `%2C`).
public struct UpstreamEndpoint: Sendable, Equatable {
    /// The base URL, without the fragment, e.g. `http://10.0.0.5:8000/v1`.
    public var url: String
    /// Relative share of new generations (smooth weighted round robin); at least 1.
    public var weight: Int
    /// Generations running at once on it; nil: the server's `max_active_sequences`.
    public var maxActive: Int?

    public init(url: String, weight: Int = 1, maxActive: Int? = nil) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.weight = max(1, weight)
        self.maxActive = maxActive.map { max(1, $0) }
    }

    /// Reads `URL` or `URL#weight=N&max_active=N`.
    public static func parse(_ spec: String) throws(UpstreamSpecError) -> UpstreamEndpoint {
        let parts = spec.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let url = String(parts[0])
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw UpstreamSpecError(description: "upstream \(redacted(url)) is not an http:// or https:// URL")
        }
        var endpoint = UpstreamEndpoint(url: url)
        guard parts.count == 2 else { return endpoint }
        for option in parts[1].split(separator: "&") {
            let pair = option.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, let value = Int(pair[1]), value >= 1 else {
                throw UpstreamSpecError(
                    description: "upstream \(redacted(url)): option '\(option)' is not name=positive integer")
            }
            switch pair[0] {
            case "weight": endpoint.weight = value
            case "max_active": endpoint.maxActive = value
            default:
                throw UpstreamSpecError(
                    description: "upstream \(redacted(url)): unknown option '\(pair[0])' (weight, max_active)")
            }
        }
        return endpoint
    }

    /// The URL as logs, metrics and `/health` show it: user name, password and query removed
    /// (either may hold a credential).
    public var displayURL: String { Self.redacted(url) }

    static func redacted(_ url: String) -> String {
        var text = url
        if let query = text.firstIndex(of: "?") { text = String(text[..<query]) + "?…" }
        guard let scheme = text.range(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound]) + "…@" + String(rest[rest.index(after: at)...])
    }
}

/// An upstream written in a form `UpstreamEndpoint.parse` does not read.
public struct UpstreamSpecError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
