import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// `GET /v1/sessions` pages like OpenAI's lists: more sessions than one page are all reachable
/// through `after`, exactly once each, in either order; bad or unknown query parameters are
/// refused naming them.
@Suite struct SessionListPagingTests {
    /// The model is not the subject (nothing here generates): a scripted backend serves.
    static let backend = ScriptedBackend(reply: "unused")
    static var scripted: ModelHost.State { .ready(backend) }

    struct Page {
        var ids: [String]
        var firstID: String?
        var lastID: String?
        var hasMore: Bool?
    }

    func page(_ s: RunningServer, _ query: String) async throws -> Page {
        let r = try await offPool { try s.client().request("GET", "/v1/sessions\(query)") }
        #expect(r.status == 200, "\(query): \(r.text)")
        let json = r.json ?? [:]
        let ids = (json["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        return Page(
            ids: ids, firstID: json["first_id"] as? String, lastID: json["last_id"] as? String,
            hasMore: json["has_more"] as? Bool)
    }

    @Test func everySessionIsReachableExactlyOnce() async throws {
        try await RunningServer.with(state: Self.scripted, configure: { $0.maxSessionsPerKey = 1000 }) { s in
            let total = ListQuery.defaultLimit * 2 + 5
            var made: [(created: Int, id: String)] = []
            for _ in 0..<total {
                let r = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
                made.append((try #require(r.json?["created"] as? Int), try #require(r.json?["id"] as? String)))
            }
            // The documented order: by creation second, then by id.
            let created = made.sorted { ($0.created, $0.id) < ($1.created, $1.id) }.map(\.id)
            #expect(Set(created).count == total)
            // Without a query: the first `defaultLimit`, oldest first, and more to come.
            let first = try await page(s, "")
            #expect(first.ids == Array(created.prefix(ListQuery.defaultLimit)))
            #expect(first.hasMore == true && first.firstID == created.first && first.lastID == first.ids.last)

            for (order, expected) in [("asc", created), ("desc", created.reversed())] {
                var seen: [String] = []
                var after: String?
                var pages = 0
                while true {
                    let p = try await page(s, "?limit=20&order=\(order)" + (after.map { "&after=\($0)" } ?? ""))
                    seen += p.ids
                    pages += 1
                    guard p.hasMore == true else { break }
                    let last = try #require(p.lastID)
                    after = last
                    #expect(pages < 10, "paging does not end")
                    if pages >= 10 { break }
                }
                #expect(pages == 3)
                #expect(seen == expected, "\(order)")
            }
            let all = try await page(s, "?limit=\(ListQuery.maxLimit)")
            #expect(all.ids == created && all.hasMore == false)
        }
    }

    @Test func emptyListHasNullCursors() async throws {
        try await RunningServer.with(state: Self.scripted) { s in
            let r = try await offPool { try s.client().request("GET", "/v1/sessions") }
            let json = try #require(r.json)
            #expect(json["object"] as? String == "list" && json["has_more"] as? Bool == false)
            #expect(json.keys.contains("first_id") && json["first_id"] is NSNull)
            #expect(json.keys.contains("last_id") && json["last_id"] is NSNull)
        }
    }

    @Test(arguments: [
        ("?limit=0", "limit"), ("?limit=101", "limit"), ("?limit=ten", "limit"), ("?order=newest", "order"),
        ("?after=sess_nope", "after"), ("?bogus=1", "bogus"), ("?limit=5&page=2", "page"),
    ])
    func badQueriesAreRefusedNamingTheParameter(query: String, field: String) async throws {
        try await RunningServer.with(state: Self.scripted) { s in
            _ = try await offPool { try s.client().postJSON("/v1/sessions", "{}") }
            let e = WireError(try await offPool { try s.client().request("GET", "/v1/sessions\(query)") })
            #expect(e.status == 400 && e.param == field, "\(query) → \(e)")
            #expect(e.code == (["bogus", "page"].contains(field) ? "unknown_parameter" : "invalid_value"))
        }
    }
}
