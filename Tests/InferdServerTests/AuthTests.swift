import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import InferdServer

@Suite struct SHA256Tests {
    @Test func knownVectors() {
        #expect(
            SHA256.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hex(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(
            SHA256.hex(SHA256.hash(Array(two.utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // Lengths around the padding boundary (55, 56, 64 bytes) against values from `sha256sum`.
        #expect(
            SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 55)))
                == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(
            SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 56)))
                == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(
            SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 64)))
                == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
        #expect(
            SHA256.hex(SHA256.hash([UInt8](repeating: 0x61, count: 1000)))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }
}

@Suite struct APIKeyringTests {
    let alpha = "alpha-key-0123456789"
    let beta = "beta-key-0123456789x"

    @Test func parsesListsAndFiles() throws {
        #expect(try APIKeyring.parse("") == [])
        #expect(try APIKeyring.parse(" \(alpha) , \(beta),") == [alpha, beta])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try "# staging\n\(alpha)\n\n  \(beta)  \n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(try APIKeyring.parse("@" + path) == [alpha, beta])
        #expect(throws: ConfigurationError.self) { try APIKeyring.parse("@/nonexistent/keys") }
        #expect(throws: ConfigurationError.self) { try APIKeyring.parse("short") }
        #expect(throws: ConfigurationError.self) { try APIKeyring.parse("has a space in the key") }
    }

    /// A key list that was given but yields no key must stop start-up, not switch authentication
    /// (and the key on /metrics) off; only the empty setting means "no keys".
    @Test func blankKeyListsAreRefusedAtStartUp() throws {
        for (arguments, environment, name) in [
            (["--api-keys", " "], [:], "api_keys"),
            (["--api-keys", ", ,"], [:], "api_keys"),
            ([], ["INFERD_API_KEYS": ","], "api_keys"),
            ([], ["INFERD_METRICS_API_KEY": " , "], "metrics_api_key"),
        ] as [([String], [String: String], String)] {
            let c = try ServerConfiguration.load(
                arguments: arguments, environment: environment, defaultFile: "/nonexistent.json")
            do {
                _ = try c.keyrings()
                Issue.record("\(arguments) \(environment) started with no key")
            } catch {
                #expect(error.description.hasPrefix(name + " is set but holds no key"), "\(error)")
            }
        }
        let none = try ServerConfiguration.load(
            arguments: [], environment: ["INFERD_API_KEYS": ""], defaultFile: "/nonexistent.json")
        #expect(try !none.keyrings().api.isEnabled)
    }

    /// Running without keys is worth a warning everywhere except on loopback.
    @Test func loopbackHosts() {
        for (host, loopback) in [
            ("127.0.0.1", true), ("127.1.2.3", true), ("localhost", true), ("::1", true), ("0.0.0.0", false),
            ("", false), ("::", false), ("10.0.0.5", false), ("128.0.0.1", false), ("192.168.1.1", false),
        ] {
            var c = ServerConfiguration()
            c.host = host
            #expect(c.listensOnLoopbackOnly == loopback, "\(host)")
        }
    }

    @Test func identifiesOnlyConfiguredKeys() {
        let ring = APIKeyring(keys: [alpha, beta])
        #expect(ring.isEnabled)
        let a = ring.identify(alpha)
        let b = ring.identify(beta)
        #expect(a?.id == APIKeyring.keyID(alpha) && a?.id.count == 8)
        #expect(a?.owner == SHA256.hex(SHA256.hash(Array(alpha.utf8))))
        #expect(b != nil && b != a)
        #expect(ring.identify(alpha + "x") == nil)
        #expect(ring.identify(String(alpha.dropLast())) == nil)
        #expect(ring.identify("") == nil)
        #expect(!APIKeyring(keys: []).isEnabled)
        #expect(APIKeyring.refuseAll.isEnabled && APIKeyring.refuseAll.identify(alpha) == nil)
    }

    @Test func summaryNeverShowsKeys() throws {
        let c = try ServerConfiguration.load(
            arguments: ["--api-keys", alpha], environment: ["INFERD_METRICS_API_KEY": beta],
            defaultFile: "/nonexistent.json")
        #expect(c.apiKeys == alpha && c.metricsAPIKey == beta)
        let text = c.summary.map { "\($0)=\($1)" }.joined(separator: " ")
        #expect(!text.contains(alpha) && !text.contains(beta))
        #expect(text.contains("api_keys=(set)"))
    }
}

/// Authentication over real sockets with the real model.
@Suite struct AuthEndToEndTests {
    static let alpha = "alpha-key-0123456789"
    static let beta = "beta-key-0123456789x"
    static let metricsKey = "metrics-key-0123456789"
    let cheap = jsonString(["prompt": "Hi", "options": ["temperature": 0, "max_tokens": 1]])

    func get(_ s: RunningServer, _ path: String, key: String? = nil) async throws -> RawResponse {
        try await offPool {
            try s.client().request("GET", path, headers: key.map { [("Authorization", "Bearer \($0)")] } ?? [])
        }
    }

    func post(_ s: RunningServer, _ body: String, key: String?, scheme: String = "Bearer") async throws
        -> RawResponse
    {
        try await offPool {
            try s.client().postJSON(
                "/v1/generations", body, headers: key.map { [("Authorization", "\(scheme) \($0)")] } ?? [])
        }
    }

    @Test func withKeysEveryEndpointButHealthNeedsOne() async throws {
        try await RunningServer.with(configure: { $0.apiKeys = "\(Self.alpha),\(Self.beta)" }) { s in

            #expect(try await get(s, "/health").status == 200)
            let missing = try await post(s, cheap, key: nil)
            #expect(missing.status == 401 && missing.errorCode == "missing_api_key")
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            #expect((missing.json?["error"] as? [String: Any])?["type"] as? String == "authentication_error")
            let wrong = try await post(s, cheap, key: Self.alpha + "x")
            #expect(wrong.status == 401 && wrong.errorCode == "invalid_api_key")
            let basic = try await post(s, cheap, key: Self.alpha, scheme: "Basic")
            #expect(basic.status == 401 && basic.errorCode == "invalid_authorization")
            // Unknown paths and methods do not reveal what exists.
            #expect(try await get(s, "/v1/nothing-here").status == 401)
            #expect(try await get(s, "/v1/generations").status == 401)
            #expect(try await get(s, "/v1/nothing-here", key: Self.beta).status == 404)
            #expect(try await get(s, "/metrics").status == 401)
            #expect(try await get(s, "/metrics", key: Self.beta).status == 200)

            let ok = try await post(s, cheap, key: Self.alpha)
            #expect(ok.status == 200)
            let lower = try await post(s, cheap, key: Self.beta, scheme: "bearer")
            #expect(lower.status == 200)

            // Logs name keys by id only.
            let lines = s.logs.lines.withLock { $0 }.joined(separator: "\n")
            #expect(!lines.contains(Self.alpha) && !lines.contains(Self.beta))
            #expect(lines.contains("api_key_id=\(APIKeyring.keyID(Self.alpha))"))
            #expect(lines.contains("presented_key_id=\(APIKeyring.keyID(Self.alpha + "x"))"))
            #expect(s.metrics.value("inferd_auth_refusals_total", labels: ["code": "missing_api_key"]) ?? 0 >= 1)
        }
    }

    @Test func metricsCanBeOpenOrHaveItsOwnKey() async throws {
        let openMetrics: (inout ServerConfiguration) -> Void = {
            $0.apiKeys = Self.alpha
            $0.metricsAuth = .open
        }
        try await RunningServer.with(configure: openMetrics) { (open: RunningServer) async throws in
            #expect(try await get(open, "/metrics").status == 200)
            #expect(try await post(open, cheap, key: nil).status == 401)
        }
        let ownKey: (inout ServerConfiguration) -> Void = {
            $0.apiKeys = Self.alpha
            $0.metricsAPIKey = Self.metricsKey
        }
        try await RunningServer.with(configure: ownKey) { (own: RunningServer) async throws in
            #expect(try await get(own, "/metrics").status == 401)
            #expect(try await get(own, "/metrics", key: Self.alpha).status == 401)
            #expect(try await get(own, "/metrics", key: Self.metricsKey).status == 200)
            // The metrics key opens nothing else.
            #expect(try await post(own, cheap, key: Self.metricsKey).status == 401)
        }
    }

    @Test func withoutKeysNothingIsAsked() async throws {
        try await RunningServer.with { (s: RunningServer) async throws in
            #expect(try await get(s, "/metrics").status == 200)
            #expect(try await post(s, cheap, key: nil).status == 200)
        }
    }

    @Test func ownershipSeam() async throws {
        let on = try RunningServer.start { $0.apiKeys = "\(Self.alpha),\(Self.beta)" }
        func request(as key: String?) -> HTTPRequest {
            let r = HTTPRequest(id: "r", method: .get, path: "/v1/sessions/x")
            if let key, let identity = on.app.access.keyring.identify(key) {
                r.context.set(AccessControl.ContextKey.owner, identity.owner)
            }
            return r
        }
        let owner = on.app.access.owner(of: request(as: Self.alpha))
        #expect(owner != nil)
        #expect(on.app.access.mayAccess(ownedBy: owner, request(as: Self.alpha)))
        #expect(!on.app.access.mayAccess(ownedBy: owner, request(as: Self.beta)))
        #expect(!on.app.access.mayAccess(ownedBy: nil, request(as: Self.alpha)))
        await on.server.shutdown()

        try await RunningServer.with { off in
            #expect(off.app.access.owner(of: HTTPRequest(id: "r", method: .get, path: "/")) == nil)
            #expect(off.app.access.mayAccess(ownedBy: owner, HTTPRequest(id: "r", method: .get, path: "/")))
            #expect(off.app.access.mayAccess(ownedBy: nil, HTTPRequest(id: "r", method: .get, path: "/")))
        }
    }
}
