import Engine
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Sessions

/// The two session stores.
enum StoreKind: String, CustomTestStringConvertible, Sendable {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when a test server is given or expected (a missing one then fails).
    static var available: [StoreKind] { TestPostgres.enabled ? [.sqlite, .postgres] : [.sqlite] }

    /// A new empty place for a store: a folder, or a database URL.
    func newPlace() throws -> String {
        switch self {
        case .sqlite:
            FileManager.default.temporaryDirectory.appendingPathComponent("inferd-contract-\(UUID().uuidString)").path
        case .postgres: try TestPostgres.freshDatabase()
        }
    }

    func open(_ place: String) throws -> any SessionStore {
        switch self {
        case .sqlite: try TranscriptStore.open(dataDir: place)
        case .postgres: try PostgresSessionStore.open(url: place, password: nil)
        }
    }

    func cleanUp(_ place: String) {
        if self == .sqlite { try? FileManager.default.removeItem(atPath: place) }
    }
}

/// What every store must do, one test body run against each store.
@Suite struct SessionStoreContractTests {
    @Test(arguments: StoreKind.available)
    func roundTripsAndMarksResponsesLeftInFlightInterrupted(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        do {
            let store = try kind.open(place)
            #expect(store.interruptedOnOpen == 0)
            try await store.createSession(
                StoredSession(
                    id: "s1", created: 5, onBusy: .replace, options: "{\"temperature\":0}",
                    entries: [TranscriptEntry(position: 0, kind: .instructions, content: "Be brief. ünïcödé 🦊")],
                    owner: "key-digest"))
            try await store.createSession(
                StoredSession(id: "s0", created: 4, onBusy: .reject, options: nil, entries: []))
            try await store.beginTurn(
                session: "s1", prompt: TranscriptEntry(position: 1, kind: .prompt, content: "hi", requestID: "r1"),
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "", requestID: "r1", status: .inProgress))
            try await store.finishTurn(
                session: "s1",
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "hello 'quoted' \\ text", requestID: "r1",
                    status: .cancelled, finishReason: "cancelled", reason: "cancel_request"))
            try await store.beginTurn(
                session: "s1", prompt: TranscriptEntry(position: 3, kind: .prompt, content: "more", requestID: "r2"),
                response: TranscriptEntry(
                    position: 4, kind: .response, content: "", requestID: "r2", status: .inProgress))
        }
        // Reopened as after kill -9: the response nobody runs any more is interrupted.
        let reopened = try kind.open(place)
        #expect(reopened.interruptedOnOpen == 1)
        let all = try reopened.loadAll()
        #expect(all.map(\.id) == ["s0", "s1"], "oldest first")
        #expect(all[0].onBusy == .reject && all[0].options == nil && all[0].owner == nil && all[0].entries.isEmpty)
        let s = try #require(try await reopened.loadSession("s1"))
        #expect(s == all[1])
        #expect(s.created == 5 && s.onBusy == .replace && s.options == "{\"temperature\":0}" && s.owner == "key-digest")
        #expect(s.entries.map(\.position) == [0, 1, 2, 3, 4])
        #expect(s.entries[0].content == "Be brief. ünïcödé 🦊")
        #expect(
            s.entries[2]
                == TranscriptEntry(
                    position: 2, kind: .response, content: "hello 'quoted' \\ text", requestID: "r1",
                    status: .cancelled, finishReason: "cancelled", reason: "cancel_request"))
        #expect(s.entries[4].status == .interrupted && s.entries[3].requestID == "r2")
        try await reopened.removeEntries(session: "s1", positions: [3, 4])
        #expect(try await reopened.loadSession("s1")?.entries.map(\.position) == [0, 1, 2])
        try await reopened.deleteSession("s1")
        #expect(try await reopened.loadSession("s1") == nil)
        #expect(try reopened.loadAll().map(\.id) == ["s0"])
        // A second open of a current schema changes nothing.
        #expect(try kind.open(place).loadAll().map(\.id) == ["s0"])
    }

    @Test(arguments: StoreKind.available)
    func aDuplicateSessionIsAnErrorAndWritesNothing(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        let store = try kind.open(place)
        let session = StoredSession(
            id: "dup", created: 1, onBusy: .queue, options: nil,
            entries: [TranscriptEntry(position: 0, kind: .instructions, content: "first")])
        try await store.createSession(session)
        var second = session
        second.entries = [TranscriptEntry(position: 0, kind: .instructions, content: "second")]
        await #expect(throws: StoreError.self) { try await store.createSession(second) }
        #expect(try await store.loadSession("dup")?.entries.map(\.content) == ["first"])
    }

    @Test(arguments: StoreKind.available)
    func sessionsSurviveAManagerRestartWithTheirTurns(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        let sid: String
        do {
            let h = try Harness(store: try kind.open(place))
            let s = try await h.session(instructions: "Remember me.")
            sid = s.id
            #expect(try await h.respond(Harness.request("r1", "hi"), s).status == .completed)
            #expect(
                h.manager.environment.metrics.value("inferd_session_cache_rebuilds_total") == nil,
                "a first turn is no rebuild")
        }
        let h = try Harness(store: try kind.open(place))
        let s = try #require(h.manager.session(sid))
        #expect(await s.transcript.map(\.kind) == [.instructions, .prompt, .response])
        let again = try await h.respond(Harness.request("r2", "again"), s)
        #expect(again.status == .completed && again.usage?.cachedTokens == 0)
        // No cache survived the restart: this turn was rebuilt from the transcript, and counted.
        #expect(h.manager.environment.metrics.value("inferd_session_cache_rebuilds_total") == 1)
        #expect(try await h.respond(Harness.request("r3", "more"), s).usage?.cachedTokens ?? 0 > 0)
        #expect(h.manager.environment.metrics.value("inferd_session_cache_rebuilds_total") == 1)
        #expect(
            await s.conversationMessages().map(\.content) == [
                "Remember me.", "hi", "The quic", "again", "The quic", "more", "The quic",
            ])
        #expect(try await h.manager.find(sid) === s)
        #expect(try await h.manager.find("sess_nope") == nil)
    }
}
