import Engine
import Foundation
import TestSupport
import Testing

@testable import Sessions

/// Tool turns in the stores: a response's calls and reasoning, and a tool result's call id,
/// survive a reopen on both stores (PostgreSQL: on another connection, as another replica would
/// read them), an edit that deletes them erases them, and a SQLite database from before tool
/// calls gains the column without losing its transcripts.
@Suite struct ToolTranscriptStoreTests {
    static let call = ToolCall(id: "call_abc", name: "get_weather", arguments: #"{"city":"Zürich \"old\" town"}"#)

    @Test(arguments: StoreKind.available)
    func callsResultsAndReasoningSurviveAReopen(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        do {
            let store = try kind.open(place)
            try await store.createSession(
                StoredSession(id: "s1", created: 1, onBusy: .queue, options: nil, entries: []))
            try await store.beginTurn(
                session: "s1",
                prompt: TranscriptEntry(position: 0, kind: .prompt, content: "Weather?", requestID: "r1"),
                response: TranscriptEntry(
                    position: 1, kind: .response, content: "", requestID: "r1", status: .inProgress))
            try await store.finishTurn(
                session: "s1",
                response: TranscriptEntry(
                    position: 1, kind: .response, content: "Let me look.", requestID: "r1", status: .completed,
                    finishReason: "stop", toolCalls: [Self.call], reasoning: "The user wants weather."))
            try await store.beginTurn(
                session: "s1",
                inputs: [
                    TranscriptEntry(
                        position: 2, kind: .toolResult, content: "18 °C", requestID: "r2", toolCallID: "call_abc")
                ],
                response: TranscriptEntry(
                    position: 3, kind: .response, content: "", requestID: "r2", status: .inProgress))
            try await store.finishTurn(
                session: "s1",
                response: TranscriptEntry(
                    position: 3, kind: .response, content: "It is 18 °C.", requestID: "r2", status: .completed,
                    finishReason: "stop"))
        }
        let reopened = try kind.open(place)
        let s = try #require(try await reopened.loadSession("s1"))
        #expect(s.entries.map(\.kind) == [.prompt, .response, .toolResult, .response])
        #expect(s.entries[1].toolCalls == [Self.call])
        #expect(s.entries[1].reasoning == "The user wants weather." && s.entries[1].content == "Let me look.")
        #expect(s.entries[2].toolCallID == "call_abc" && s.entries[2].content == "18 °C")
        #expect(s.entries[3].toolCalls == nil && s.entries[3].reasoning == nil && s.entries[3].toolCallID == nil)
        // Deleting by hand erases what the entry held, calls included.
        try await reopened.editTranscript(session: "s1", adding: [], deleting: [1, 2])
        let edited = try #require(try await reopened.loadSession("s1"))
        #expect(edited.entries[1].kind == .deleted && edited.entries[1].toolCalls == nil)
        #expect(edited.entries[2].kind == .deleted && edited.entries[2].toolCallID == nil)
    }

    @Test func aDatabaseFromBeforeToolCallsGainsTheColumnAndKeepsItsTranscripts() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-old-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent(TranscriptStore.fileName).path
        do {
            // The schema as released before tool calls (no `extras`).
            let db = try SQLiteDatabase(path: path)
            try db.execute(
                """
                CREATE TABLE sessions(
                    id TEXT PRIMARY KEY, created INTEGER NOT NULL, on_busy TEXT NOT NULL, options TEXT, owner TEXT);
                CREATE TABLE entries(
                    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                    position INTEGER NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL,
                    request_id TEXT, status TEXT, finish_reason TEXT, reason TEXT,
                    PRIMARY KEY(session_id, position));
                INSERT INTO sessions VALUES ('s1', 1, 'queue', NULL, NULL);
                INSERT INTO entries VALUES ('s1', 0, 'prompt', 'hi', 'r1', NULL, NULL, NULL);
                INSERT INTO entries VALUES ('s1', 1, 'response', 'hello', 'r1', 'completed', 'stop', NULL);
                """)
        }
        let store = try TranscriptStore.open(dataDir: dir.path)
        let s = try #require(try store.loadAll().first)
        #expect(s.entries.map(\.content) == ["hi", "hello"] && s.entries[1].toolCalls == nil)
        try store.finishTurn(
            session: "s1",
            response: TranscriptEntry(
                position: 1, kind: .response, content: "", requestID: "r1", status: .completed, finishReason: "stop",
                toolCalls: [Self.call]))
        #expect(try TranscriptStore.open(dataDir: dir.path).loadAll().first?.entries[1].toolCalls == [Self.call])
    }
}
