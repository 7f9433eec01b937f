public enum HTTPServerError: Error, Sendable, CustomStringConvertible, Equatable {
    case invalidHost(String)
    /// Binding or listening failed; `reason` is the system's text (e.g. "Address already in use").
    case listenFailed(host: String, port: Int, reason: String)
    case alreadyStarted
    /// TLS was asked for but cannot be used: `reason` says why (no TLS support, half a
    /// configuration, or a certificate/key GnuTLS refused).
    case tlsUnavailable(reason: String)

    public var description: String {
        switch self {
        case .tlsUnavailable(let r): "cannot serve HTTPS: \(r)"
        case .invalidHost(let h): "invalid listen address '\(h)': expected a numeric IPv4 or IPv6 address"
        case .listenFailed(let h, let p, let r): "could not listen on \(h):\(p): \(r)"
        case .alreadyStarted: "server already started"
        }
    }
}
