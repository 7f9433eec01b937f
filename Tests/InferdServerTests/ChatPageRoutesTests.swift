import ChatPage
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// The chat page's files over a real socket: each with its type, the strict policy and a
/// validator; open without a key while the API needs one; gone with `ui: false`. What the page
/// does in a browser is Tests/browser (scripts/browser-tests.sh).
@Suite struct ChatPageRoutesTests {
    static let backend = ScriptedBackend(reply: "unused")
    static let key = "page-key-0123456789ab"

    func get(_ s: RunningServer, _ path: String, _ headers: [(String, String)] = []) async throws -> RawResponse {
        try await offPool { try s.client().request("GET", path, headers: headers) }
    }

    @Test func everyFileIsServedWithThePolicyAndAValidator() async throws {
        try await RunningServer.with(state: .ready(Self.backend)) { s in
            for asset in ChatPageAssets.all {
                let r = try await get(s, asset.path)
                #expect(r.status == 200, "\(asset.path)")
                #expect(r.body == asset.bytes && !asset.bytes.isEmpty)
                #expect(r.header("Content-Type") == asset.contentType)
                let policy = try #require(r.header("Content-Security-Policy"))
                #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"))
                #expect(!policy.contains("unsafe"))
                #expect(r.header("X-Content-Type-Options") == "nosniff")
                let etag = try #require(r.header("ETag"))
                let again = try await get(s, asset.path, [("If-None-Match", etag)])
                #expect(again.status == 304 && again.body.isEmpty)
                let stale = try await get(s, asset.path, [("If-None-Match", "\"0\"")])
                #expect(stale.status == 200)
            }
            let r1 = try await get(s, "/ui/other.js")
            #expect(r1.status == 404)
            // The page loads nothing from elsewhere and runs no inline script.
            let html = try await get(s, "/").text
            #expect(!html.contains("<script>") && !html.contains("<style") && !html.contains("//cdn"))
            #expect(html.contains("src=\"/ui/app.js\""))
        }
    }

    @Test func thePageIsOpenWhileTheAPINeedsAKey() async throws {
        try await RunningServer.with(state: .ready(Self.backend), configure: { $0.apiKeys = Self.key }) { s in
            let r2 = try await get(s, "/")
            #expect(r2.status == 200)
            let r3 = try await get(s, "/ui/app.js")
            #expect(r3.status == 200)
            let r4 = try await get(s, "/v1/sessions")
            #expect(r4.status == 401)
            let r5 = try await get(s, "/v1/sessions", [("Authorization", "Bearer \(Self.key)")])
            #expect(r5.status == 200)
        }
    }

    @Test func uiFalseServesNoPage() async throws {
        try await RunningServer.with(state: .ready(Self.backend), configure: { $0.ui = false }) { s in
            let r6 = try await get(s, "/")
            #expect(r6.status == 404)
            let r7 = try await get(s, "/ui/app.js")
            #expect(r7.status == 404)
        }
        try await RunningServer.with(
            state: .ready(Self.backend),
            configure: {
                $0.ui = false
                $0.apiKeys = Self.key
            }
        ) { s in
            // Without the page its paths are API paths like any other: a key first.
            let r8 = try await get(s, "/")
            #expect(r8.status == 401)
        }
    }

    @Test func validatorsDifferWhenBytesDo() {
        let tags = Set(ChatPageAssets.all.map(\.etag))
        #expect(tags.count == ChatPageAssets.all.count)
        #expect(ChatPageAssets.all.allSatisfy { $0.etag.hasPrefix("\"") && $0.etag.count == 18 })
    }
}
