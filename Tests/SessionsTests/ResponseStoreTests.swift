import Foundation
import Sessions
import Testing

/// The Responses store: beside the sessions in the same database file, surviving a reopen,
/// unfinished responses failed (never resumed) on opening, and retention oldest first.
@Suite struct ResponseStoreTests {
    static func tempDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("inferd-responses-\(UUID().uuidString)").path
    }

    static func response(_ id: String, created: Int, status: String, owner: String? = "k1") -> StoredResponse {
        StoredResponse(id: id, owner: owner, createdAt: created, status: status, payload: "{\"id\":\"\(id)\",\"é\":1}")
    }

    @Test func survivesReopenBesideSessionsAndFailsWhatWasRunning() throws {
        let dir = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let sessions = try TranscriptStore.open(dataDir: dir)
            try sessions.createSession(StoredSession(id: "s1", created: 1, onBusy: .queue, options: nil, entries: []))
            let store = try ResponseStore.open(dataDir: dir)
            try store.save(Self.response("done", created: 10, status: "completed"))
            try store.save(Self.response("running", created: 11, status: "in_progress", owner: nil))
            try store.save(Self.response("waiting", created: 12, status: "queued"))
            // A later save replaces the row.
            var updated = Self.response("done", created: 10, status: "completed")
            updated.payload = "{\"final\":true}"
            try store.save(updated)
            #expect(store.interruptedOnOpen.isEmpty)
        }
        let reopened = try ResponseStore.open(dataDir: dir)
        #expect(reopened.interruptedOnOpen == ["running", "waiting"])
        #expect(
            try reopened.load("done")
                == StoredResponse(
                    id: "done", owner: "k1", createdAt: 10, status: "completed", payload: "{\"final\":true}"))
        let running = try #require(try reopened.load("running"))
        #expect(running.status == "failed" && running.interrupted && running.owner == nil)
        #expect(try reopened.load("nope") == nil)
        // The sessions' tables are untouched by the responses' migration.
        #expect(try TranscriptStore.open(dataDir: dir).loadAll().map(\.id) == ["s1"])
        // Opened again, nothing more is interrupted: a failed response is never run again.
        #expect(try ResponseStore.open(dataDir: dir).interruptedOnOpen.isEmpty)
        #expect(try reopened.delete("done"))
        #expect(try !reopened.delete("done"))
        #expect(try reopened.load("done") == nil)
    }

    @Test func retentionDropsOldFinishedResponsesFirst() throws {
        let store = ResponseStore.inMemory()
        for (i, status) in ["completed", "in_progress", "cancelled", "failed", "completed", "incomplete"].enumerated() {
            try store.save(Self.response("r\(i)", created: 100 + i, status: status))
        }
        // By age: finished ones created before 102 go; the running r1 stays.
        #expect(try store.prune(olderThan: 102) == ["r0"])
        // By count: the owner's oldest finished, oldest first.
        #expect(try store.evictOldestFinished(of: "k1", count: 2) == ["r2", "r3"])
        #expect(store.count == 3)
        #expect(try store.load("r1") != nil && store.load("r4") != nil && store.load("r5") != nil)
    }
}
