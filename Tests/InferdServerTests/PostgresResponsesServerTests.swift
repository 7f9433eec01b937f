import Foundation
import TestSupport
import Testing

/// Stored responses through two release binaries over one PostgreSQL database (`--store-url`), as
/// replicas behind a proxy: what one stored, the other serves, to its owner only.
@Suite(.serialized, .enabled(if: TestPostgres.enabled, "needs PostgreSQL: make postgres-test"))
struct PostgresResponsesServerTests {
    static let k1 = "k1-0123456789abcdef"
    static let k2 = "k2-0123456789abcdef"

    static func server(_ url: String, _ name: String) throws -> SessionsRestartTests.ServerProcess {
        try PostgresServerTests.server(url, ["--api-keys", "\(k1),\(k2)", "--replica-id", name])
    }

    static func auth(_ key: String) -> [(String, String)] { [("Authorization", "Bearer \(key)")] }

    static func text(_ r: [String: Any]?) -> String? {
        ((r?["output"] as? [[String: Any]])?.first?["content"] as? [[String: Any]])?.first?["text"] as? String
    }

    @Test func aResponseStoredOnOneServerIsServedByTheOtherToItsOwnerOnly() async throws {
        let url = try TestPostgres.freshDatabase()
        try await offPool {
            let a = try Self.server(url, "a")
            defer { a.stop() }
            let b = try Self.server(url, "b")
            defer { b.stop() }
            let model = try #require(
                ((try a.client().request("GET", "/v1/models", headers: Self.auth(Self.k1)).json?["data"]
                    as? [[String: Any]])?.first?["id"] as? String))
            let created = try a.client().postJSON(
                "/v1/responses",
                jsonString(["model": model, "input": "Name a colour.", "max_output_tokens": 6, "temperature": 0]),
                headers: Self.auth(Self.k1))
            let id = try #require(created.json?["id"] as? String, "\(created.text)")
            let onB = try b.client().request("GET", "/v1/responses/\(id)", headers: Self.auth(Self.k1))
            #expect(onB.status == 200 && Self.text(onB.json) == Self.text(created.json) && Self.text(onB.json) != nil)
            // Another key: 404 on the other replica too, as for an id that does not exist.
            for path in ["/v1/responses/\(id)", "/v1/responses/\(id)/input_items"] {
                #expect(try b.client().request("GET", path, headers: Self.auth(Self.k2)).status == 404)
            }
            let chained = try b.client().postJSON(
                "/v1/responses",
                jsonString([
                    "model": model, "input": "Another.", "max_output_tokens": 6, "previous_response_id": id,
                    "temperature": 0,
                ]), headers: Self.auth(Self.k2))
            #expect(chained.status == 404, "\(chained.text)")
            #expect(try b.client().request("DELETE", "/v1/responses/\(id)", headers: Self.auth(Self.k2)).status == 404)
            #expect(try b.client().request("DELETE", "/v1/responses/\(id)", headers: Self.auth(Self.k1)).status == 200)
            #expect(try a.client().request("GET", "/v1/responses/\(id)", headers: Self.auth(Self.k1)).status == 404)

            // A background response on a, cancelled through b: the cancel reaches a through the store.
            let bg = try a.client().postJSON(
                "/v1/responses",
                jsonString([
                    "model": model, "input": "Count from 1 to 500, one number per line.", "background": true,
                    "max_output_tokens": 900, "ignore_eos": true,
                ]), headers: Self.auth(Self.k1))
            let bgID = try #require(bg.json?["id"] as? String, "\(bg.text)")
            #expect(
                try b.client().request("POST", "/v1/responses/\(bgID)/cancel", headers: Self.auth(Self.k2)).status
                    == 404)
            let cancelled = try b.client().request(
                "POST", "/v1/responses/\(bgID)/cancel", headers: Self.auth(Self.k1))
            #expect(cancelled.status == 200 && cancelled.json?["status"] as? String == "cancelled", "\(cancelled.text)")
            let onA = try a.client().request("GET", "/v1/responses/\(bgID)", headers: Self.auth(Self.k1))
            #expect(onA.json?["status"] as? String == "cancelled")
            #expect(Self.text(onA.json) == Self.text(cancelled.json))
        }
    }
}
