import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// A session's `metadata` (the chat page's title and settings): given at creation, shown by get
/// and list, replaced by `POST /v1/sessions/{id}`, the same record as its conversation's
/// metadata, removed with the session; bad values refused naming the field; another key's
/// session is not found.
@Suite struct SessionMetadataEndToEndTests {
    static let backend = ScriptedBackend(reply: "Hello there.")
    static let alpha = "alpha-key-0123456789"
    static let beta = "beta-key-0123456789x"

    func call(
        _ s: RunningServer, _ method: String, _ path: String, _ body: [String: Any]? = nil, key: String? = nil
    ) async throws -> RawResponse {
        let json = body.map { jsonString($0) }
        return try await offPool {
            var headers: [(String, String)] = []
            if let key { headers.append(("Authorization", "Bearer \(key)")) }
            if json != nil { headers.append(("Content-Type", "application/json")) }
            return try s.client().request(method, path, headers: headers, body: Array((json ?? "").utf8))
        }
    }

    @Test func keptShownReplacedAndRemoved() async throws {
        try await RunningServer.with(state: .ready(Self.backend)) { s in
            let created = try await call(s, "POST", "/v1/sessions", ["metadata": ["title": "Sea", "seed": "7"]])
            #expect(created.status == 201, "\(created.text)")
            let id = try #require(created.json?["id"] as? String)
            #expect(created.json?["metadata"] as? [String: String] == ["title": "Sea", "seed": "7"])
            let plain = try await call(s, "POST", "/v1/sessions", [:])
            let plainID = try #require(plain.json?["id"] as? String)
            #expect(plain.json?["metadata"] as? [String: String] == [:])

            let got = try await call(s, "GET", "/v1/sessions/\(id)")
            #expect(got.json?["metadata"] as? [String: String] == ["title": "Sea", "seed": "7"])
            let list = try await call(s, "GET", "/v1/sessions")
            let rows = list.json?["data"] as? [[String: Any]] ?? []
            let byID = Dictionary(uniqueKeysWithValues: rows.map { ($0["id"] as? String ?? "", $0) })
            #expect(byID[id]?["metadata"] as? [String: String] == ["title": "Sea", "seed": "7"])
            #expect(byID[plainID]?["metadata"] as? [String: String] == [:])

            let renamed = try await call(s, "POST", "/v1/sessions/\(id)", ["metadata": ["title": "Ocean"]])
            #expect(renamed.status == 200, "\(renamed.text)")
            #expect(renamed.json?["metadata"] as? [String: String] == ["title": "Ocean"])
            // The conversation of the same session sees the same record.
            let conv = "conv_" + id.dropFirst("sess_".count)
            let conversation = try await call(s, "GET", "/v1/conversations/\(conv)")
            #expect(conversation.json?["metadata"] as? [String: String] == ["title": "Ocean"])
            _ = try await call(s, "POST", "/v1/conversations/\(conv)", ["metadata": ["title": "Bay"]])
            let after = try await call(s, "GET", "/v1/sessions/\(id)")
            #expect(after.json?["metadata"] as? [String: String] == ["title": "Bay"])

            #expect(try await call(s, "DELETE", "/v1/sessions/\(id)").status == 204)
            let archived = try await s.app.archive.store.conversationMetadata(conv)
            #expect(archived == nil)
        }
    }

    @Test(arguments: [
        (#"{"metadata": {"title": 5}}"#, "metadata.title"),
        (#"{"metadata": "title"}"#, "metadata"),
        (#"{"metadata": {"title": "\#(String(repeating: "x", count: 513))"}}"#, "metadata.title"),
        (#"{"metadata": {"\#(String(repeating: "k", count: 65))": "v"}}"#, "metadata"),
        ("{\"metadata\": {" + (0..<17).map { "\"k\($0)\": \"v\"" }.joined(separator: ", ") + "}}", "metadata"),
    ])
    func badMetadataIsRefusedNamingTheField(body: String, param: String) async throws {
        try await RunningServer.with(state: .ready(Self.backend)) { s in
            let created = try await offPool { try s.client().postJSON("/v1/sessions", body) }
            #expect(created.status == 400 && created.errorParam == param, "\(created.text)")
            let ok = try await call(s, "POST", "/v1/sessions", [:])
            let id = try #require(ok.json?["id"] as? String)
            let updated = try await offPool { try s.client().postJSON("/v1/sessions/\(id)", body) }
            #expect(updated.status == 400 && updated.errorParam == param, "\(updated.text)")
            let missing = try await call(s, "POST", "/v1/sessions/\(id)", [:])
            #expect(missing.status == 400 && missing.errorParam == "metadata", "\(missing.text)")
            let unknown = try await call(s, "POST", "/v1/sessions/\(id)", ["metadata": [:], "title": "x"])
            #expect(unknown.status == 400 && unknown.errorParam == "title", "\(unknown.text)")
        }
    }

    @Test func anotherKeysSessionIsNotFound() async throws {
        try await RunningServer.with(
            state: .ready(Self.backend), configure: { $0.apiKeys = "\(Self.alpha),\(Self.beta)" }
        ) { s in
            let created = try await call(s, "POST", "/v1/sessions", ["metadata": ["title": "mine"]], key: Self.alpha)
            let id = try #require(created.json?["id"] as? String)
            let other = try await call(s, "POST", "/v1/sessions/\(id)", ["metadata": ["title": "x"]], key: Self.beta)
            #expect(other.status == 404)
            let mine = try await call(s, "GET", "/v1/sessions/\(id)", key: Self.alpha)
            #expect(mine.json?["metadata"] as? [String: String] == ["title": "mine"])
        }
    }
}
