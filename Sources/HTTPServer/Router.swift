import Telemetry

public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Runs around every request's handler, including the 404/405 answers for unmatched paths:
/// it may answer itself (e.g. 401) or call `next`. The HTTP layer gives it no meaning.
public typealias Middleware = @Sendable (HTTPRequest, _ next: Handler) async throws -> HTTPResponse

/// Maps method + path pattern (`/v1/sessions/{id}/responses`) to handlers.
///
/// A literal segment beats a `{parameter}` segment when two patterns match the same path.
/// HEAD falls back to the GET handler (libmicrohttpd drops the body).
public final class Router: Sendable {
    struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    package enum Match {
        case found(pattern: String, handler: Handler, parameters: [String: String])
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    private let routes = Locked<[Route]>([])
    private let middlewares = Locked<[Middleware]>([])
    private let headGate = Locked<HeadGate?>(nil)

    public init() {}

    /// Adds a middleware; the first added is the outermost.
    public func use(_ middleware: @escaping Middleware) {
        middlewares.withLock { $0.append(middleware) }
    }

    /// Sets the gate every request's head passes before its body is read (one; a later call
    /// replaces it). Without one, every complete head passes, trusted.
    public func gate(_ gate: @escaping HeadGate) {
        headGate.withLock { $0 = gate }
    }

    func decide(_ head: RequestHead) -> HeadDecision {
        guard let gate = headGate.withLock({ $0 }) else { return .pass(trusted: true) }
        return gate(head)
    }

    /// `handler` inside every middleware.
    func wrap(_ handler: @escaping Handler) -> Handler {
        middlewares.withLock { $0 }.reversed().reduce(handler) { next, middleware in
            { request in try await middleware(request, next) }
        }
    }

    public func add(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping Handler) {
        let route = Route(method: method, pattern: pattern, segments: Self.parse(pattern), handler: handler)
        routes.withLock { $0.append(route) }
    }

    public func get(_ pattern: String, _ handler: @escaping Handler) { add(.get, pattern, handler) }
    public func post(_ pattern: String, _ handler: @escaping Handler) { add(.post, pattern, handler) }
    public func put(_ pattern: String, _ handler: @escaping Handler) { add(.put, pattern, handler) }
    public func delete(_ pattern: String, _ handler: @escaping Handler) { add(.delete, pattern, handler) }

    static func parse(_ pattern: String) -> [Segment] {
        pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
    }

    package func match(_ method: HTTPMethod, _ path: String) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let all = routes.withLock { $0 }
        // (route, parameters, literal count) for every pattern matching the path.
        var candidates: [(Route, [String: String], Int)] = []
        for route in all {
            guard route.segments.count == parts.count else { continue }
            var params: [String: String] = [:]
            var literals = 0
            var ok = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let s):
                    if s != part { ok = false }
                    literals += 1
                case .parameter(let name):
                    params[name] = part
                }
                if !ok { break }
            }
            if ok { candidates.append((route, params, literals)) }
        }
        if candidates.isEmpty { return .notFound }
        let best = candidates.map(\.2).max()!
        let top = candidates.filter { $0.2 == best }
        if let hit = top.first(where: { $0.0.method == method })
            ?? (method == .head ? top.first(where: { $0.0.method == .get }) : nil)
        {
            return .found(pattern: hit.0.pattern, handler: hit.0.handler, parameters: hit.1)
        }
        var allowed: [HTTPMethod] = []
        for candidate in top where !allowed.contains(candidate.0.method) {
            allowed.append(candidate.0.method)
        }
        return .methodNotAllowed(allowed: allowed)
    }
}
