import Foundation
import TestSupport
import Testing

@testable import Sessions

extension StoreKind {
    /// The stored-responses store of this kind at `place`, written by replica `replica`.
    func openResponses(_ place: String, replica: String = "r1") throws -> any ResponseStoring {
        switch self {
        case .sqlite: try ResponseStore.open(dataDir: place)
        case .postgres: try PostgresResponseStore.open(url: place, password: nil, replica: replica)
        }
    }
}

/// What every stored-responses store must do (one body run against SQLite and PostgreSQL), and
/// what a shared one must do with several replicas: fail only a dead replica's unfinished
/// responses, never a live one's, and carry a cancel request to the replica that runs one.
@Suite struct ResponseStoreContractTests {
    static func response(_ id: String, created: Int, status: String, owner: String? = "k1") -> StoredResponse {
        StoredResponse(
            id: id, owner: owner, createdAt: created, status: status,
            payload: "{\"id\":\"\(id)\",\"text\":\"ünïcödé 🦊 'q' \\\\ $1\"}")
    }

    /// The columns a store keeps, without the replica (which only a shared store records).
    static func columns(_ r: StoredResponse?) -> [String]? {
        r.map { [$0.id, $0.owner ?? "nil", "\($0.createdAt)", $0.status, $0.payload, "\($0.interrupted)"] }
    }

    @Test(arguments: StoreKind.available)
    func savesLoadsDeletesAndFailsWhatWasRunningOnReopen(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        do {
            let store = try kind.openResponses(place)
            #expect(store.interruptedOnOpen.isEmpty && store.count == 0)
            try await store.save(Self.response("done", created: 10, status: "completed"))
            try await store.save(Self.response("running", created: 11, status: "in_progress", owner: nil))
            try await store.save(Self.response("waiting", created: 11, status: "queued"))
            var updated = Self.response("done", created: 10, status: "completed")
            updated.payload = "{\"final\":true}"
            try await store.save(updated)
            #expect(store.count == 3)
            #expect(Self.columns(try await store.load("done")) == Self.columns(updated))
            #expect(
                Self.columns(try await store.load("running"))
                    == Self.columns(Self.response("running", created: 11, status: "in_progress", owner: nil)))
            try await store.saveConversationMetadata("conv_1", "{\"topic\":\"ü\"}")
            try await store.saveConversationMetadata("conv_1", "{\"topic\":\"b\"}")
            #expect(try await store.conversationMetadata("conv_1") == "{\"topic\":\"b\"}")
            #expect(try await store.conversationMetadata("conv_2") == nil)
        }
        // Reopened by the same replica, as after kill -9: what it was running is failed, oldest first.
        try await Self.checkReopened(try kind.openResponses(place))
        // Opened again, nothing more is failed: a failed response is never run again.
        #expect(try kind.openResponses(place).interruptedOnOpen.isEmpty)
    }

    static func checkReopened(_ reopened: any ResponseStoring) async throws {
        #expect(reopened.interruptedOnOpen == ["running", "waiting"])
        let running = try #require(try await reopened.load("running"))
        #expect(running.status == "failed" && running.interrupted && running.owner == nil)
        #expect(try await reopened.load("done")?.interrupted == false)
        #expect(try await reopened.load("nope") == nil)
        #expect(try await reopened.conversationMetadata("conv_1") == "{\"topic\":\"b\"}")
        try await reopened.deleteConversationMetadata("conv_1")
        #expect(try await reopened.conversationMetadata("conv_1") == nil)
        #expect(try await reopened.delete("done"))
        #expect(try await !reopened.delete("done"))
        #expect(try await reopened.load("done") == nil && reopened.count == 2)
    }

    /// Retention by age is every owner's; by count it is one owner's own oldest finished, never
    /// another owner's (issue #39: one key's responses once evicted another's) nor a running one.
    @Test(arguments: StoreKind.available)
    func retentionDropsOldFinishedResponsesFirstAndNeverRunningOnesNorAnotherOwners(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        let store = try kind.openResponses(place)
        // r6 shares r5's second: the order of saving breaks the tie.
        let statuses = ["completed", "in_progress", "cancelled", "failed", "completed", "incomplete", "completed"]
        for (i, status) in statuses.enumerated() {
            try await store.save(Self.response("r\(i)", created: 100 + min(i, 5), status: status))
        }
        // Older than every k1 response but r0's age: other owners', kept by anything k1 does.
        try await store.save(Self.response("b0", created: 102, status: "completed", owner: "k2"))
        try await store.save(Self.response("n0", created: 102, status: "completed", owner: nil))
        #expect(try await store.prune(olderThan: 102) == ["r0"])
        #expect(
            try await store.holdings(of: "k1") == ResponseHoldings(owned: 6, ownedUnfinished: 1, total: 8))
        #expect(try await store.evictOldestFinished(of: "k1", count: 3) == ["r2", "r3", "r4"])
        #expect(store.count == 5)
        for id in ["r1", "r5", "r6", "b0", "n0"] { #expect(try await store.load(id) != nil) }
        #expect(try await store.evictOldestFinished(of: "k1", count: 10) == ["r5", "r6"])
        #expect(try await store.load("r1")?.status == "in_progress")
        #expect(try await store.holdings(of: nil) == ResponseHoldings(owned: 1, ownedUnfinished: 0, total: 3))
        #expect(try await store.evictOldestFinished(of: nil, count: 5) == ["n0"])
        #expect(try await store.evictOldestFinished(of: "k3", count: 5) == [])
        #expect(try await store.load("b0") != nil)
        #expect(try await store.holdings(of: "k2") == ResponseHoldings(owned: 1, ownedUnfinished: 0, total: 2))
    }

    // MARK: Several replicas on one PostgreSQL database

    static var postgres: [StoreKind] { StoreKind.available.filter { $0 == .postgres } }

    /// Re-reads `id` until `done` holds (a closed connection's locks are freed a moment later).
    static func eventually(_ store: any ResponseStoring, _ id: String, _ done: (StoredResponse?) -> Bool) async throws
        -> StoredResponse?
    {
        let deadline = Date().addingTimeInterval(5)
        var r = try await store.load(id)
        while !done(r), Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            r = try await store.load(id)
        }
        return r
    }

    @Test(arguments: postgres)
    func aReplicaFailsOnlyADeadReplicasRunningResponses(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        let b = try kind.openResponses(place, replica: "b")
        try await b.save(Self.response("rb", created: 1, status: "in_progress"))
        do {
            let a = try kind.openResponses(place, replica: "a")
            #expect(a.interruptedOnOpen.isEmpty, "b is alive: its response is not a's to fail")
            try await a.save(Self.response("ra", created: 2, status: "queued"))
            #expect(try await a.load("rb")?.status == "in_progress")
            let ra = try await b.load("ra")
            #expect(ra?.status == "queued" && ra?.replica == "a")
            // A second live process under the same replica name (two left with the default host
            // name) is not mistaken for a restart of the first: neither fails the other's.
            let twin = try kind.openResponses(place, replica: "a")
            #expect(twin.interruptedOnOpen.isEmpty)
            #expect(try await twin.load("ra")?.status == "queued")
            try await twin.save(Self.response("twin", created: 2, status: "in_progress"))
            #expect(try await a.load("twin")?.status == "in_progress")
            withExtendedLifetime(a) {}
        }
        // a has gone (its connections closed): b reading a's response finds it orphaned.
        let ra = try await Self.eventually(b, "ra") { $0?.status == "failed" }
        #expect(ra?.status == "failed" && ra?.interrupted == true)
        let rb = try await b.load("rb")
        #expect(rb?.status == "in_progress" && rb?.interrupted == false)

        // Start-up of another replica fails a dead replica's responses, and leaves the live one's.
        do {
            let d = try kind.openResponses(place, replica: "d")
            try await d.save(Self.response("rd", created: 3, status: "in_progress"))
        }
        var failed: [String] = []
        let deadline = Date().addingTimeInterval(5)
        while failed.isEmpty, Date() < deadline {
            failed = try kind.openResponses(place, replica: "c").interruptedOnOpen
            if failed.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        // The twin's too: it has gone with a.
        #expect(failed == ["rd"] || failed == ["twin", "rd"])
        #expect(try await Self.eventually(b, "twin") { $0?.status == "failed" }?.status == "failed")
        let c = try kind.openResponses(place, replica: "c")
        #expect(c.interruptedOnOpen.isEmpty)
        #expect(try await c.load("rb")?.status == "in_progress")
        #expect(try await c.load("rd")?.interrupted == true)
        withExtendedLifetime(b) {}
    }

    @Test(arguments: postgres)
    func aLostLivenessConnectionIsTakenBackBeforeTheNextRunningResponse(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        let a = try #require(try kind.openResponses(place, replica: "a") as? PostgresResponseStore)
        let b = try kind.openResponses(place, replica: "b")
        // The database drops a's lock-holding connection (a restart, a network cut).
        let admin = try PostgresConnection(conninfo: place, password: nil)
        let killed = try admin.query(
            """
            SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
                AND classid = \(PostgresResponseStore.livenessNamespace)::oid
                AND objid = (hashtext($1)::bigint & 4294967295)::oid
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, [a.instance])
        #expect(killed.count == 1)
        try await a.save(Self.response("ra", created: 1, status: "in_progress"))
        // a holds its lock again: b must not take its running response for an orphan.
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await b.load("ra")?.status == "in_progress")
        withExtendedLifetime(a) {}
    }

    @Test(arguments: postgres)
    func aCancelRequestReachesTheRunningReplicaThroughTheStore(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        let a = try kind.openResponses(place, replica: "a")
        let b = try kind.openResponses(place, replica: "b")
        try await a.save(Self.response("bg", created: 1, status: "in_progress"))
        try await a.save(Self.response("fin", created: 1, status: "completed"))
        #expect(try await !a.isCancelRequested("bg"))
        #expect(try await b.requestCancel("bg"))
        #expect(try await a.isCancelRequested("bg"))
        #expect(try await !b.requestCancel("fin"), "a finished response has nothing to cancel")
        #expect(try await !b.requestCancel("nope"))
        #expect(try await !a.isCancelRequested("fin"))
    }
}
