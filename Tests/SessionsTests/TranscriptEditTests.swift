import Engine
import Foundation
import TestSupport
import Testing

@testable import Sessions

/// Transcript edits by hand (conversation items): one transaction in each store, positions that
/// survive restarts and are never reused, edits serialized with turns by the session's queue, and
/// a deletion that cuts the kept KV cache back to before the deleted entry.
@Suite struct TranscriptEditTests {
    static func edit(_ id: String, _ edit: TranscriptEdit, onBusy: BusyPolicy = .queue) -> TurnRequest {
        TurnRequest.editing(edit, id: id, onBusy: onBusy)
    }

    static func add(_ id: String, _ messages: (String, String)...) -> TurnRequest {
        edit(id, .append(messages.map { TranscriptEdit.Message(role: $0.0, text: $0.1) }))
    }

    @Test(arguments: StoreKind.available)
    func anEditIsOneTransaction(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        do {
            let store = try kind.open(place)
            try await store.createSession(
                StoredSession(
                    id: "s1", created: 1, onBusy: .queue, options: nil,
                    entries: [TranscriptEntry(position: 0, kind: .instructions, content: "Be brief.")]))
            try await store.beginTurn(
                session: "s1", prompt: TranscriptEntry(position: 1, kind: .prompt, content: "hi", requestID: "r1"),
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "", requestID: "r1", status: .inProgress))
            try await store.finishTurn(
                session: "s1",
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "hello", requestID: "r1", status: .completed,
                    finishReason: "stop"))
            try await store.editTranscript(
                session: "s1",
                adding: [
                    TranscriptEntry(position: 3, kind: .userItem, content: "My name is Ada. 🦊"),
                    TranscriptEntry(position: 4, kind: .developerItem, content: "Be 'kind'."),
                ], deleting: [1])
            // A failing edit writes nothing: the first entry would enter, the second collides.
            await #expect(throws: StoreError.self) {
                try await store.editTranscript(
                    session: "s1",
                    adding: [
                        TranscriptEntry(position: 5, kind: .assistantItem, content: "x"),
                        TranscriptEntry(position: 3, kind: .userItem, content: "duplicate"),
                    ], deleting: [2])
            }
        }
        let reopened = try kind.open(place)
        let s = try #require(try await reopened.loadSession("s1"))
        #expect(s.entries.map(\.position) == [0, 1, 2, 3, 4])
        #expect(s.entries.map(\.kind) == [.instructions, .deleted, .response, .userItem, .developerItem])
        #expect(s.entries[1] == TranscriptEntry(position: 1, kind: .deleted, content: ""), "nothing of it is kept")
        #expect(s.entries[2].content == "hello" && s.entries[2].requestID == "r1")
        #expect(s.entries[3].content == "My name is Ada. 🦊" && s.entries[4].content == "Be 'kind'.")
        #expect(try await reopened.sessionOfRequest("r1", owner: nil) == "s1")
        // Request ids are scoped by owner: a key's own "r1" is not this session's.
        #expect(try await reopened.sessionOfRequest("r1", owner: "0123abcd") == nil)
        #expect(try reopened.loadAll().first?.entries == s.entries)
    }

    @Test(arguments: StoreKind.available)
    func itemsSurviveARestartAndADeletedPositionIsNeverReused(_ kind: StoreKind) async throws {
        let place = try kind.newPlace()
        defer { kind.cleanUp(place) }
        let sid: String
        do {
            let h = try Harness(store: try kind.open(place))
            let s = try await h.session(instructions: "Be brief.")
            sid = s.id
            #expect(try await h.respond(Harness.request("r1", "hi"), s).status == .completed)
            let added = try await h.respond(Self.add("e1", ("user", "u1"), ("assistant", "a1")), s)
            #expect(added.status == .completed && added.addedEntries.map(\.position) == [3, 4])
            #expect(added.addedEntries.map(\.kind) == [.userItem, .assistantItem])
            let deleted = try await h.respond(Self.edit("e2", .delete(position: 4)), s)
            #expect(deleted.status == .completed)
            let twice = try await h.respond(Self.edit("e3", .delete(position: 4)), s)
            #expect(twice.status == .failed && twice.error == .entryNotFound(position: 4))
        }
        let h = try Harness(store: try kind.open(place))
        let s = try #require(h.manager.session(sid))
        #expect(await s.transcript.map(\.kind) == [.instructions, .prompt, .response, .userItem, .deleted])
        #expect(
            await s.snapshot(backend: nil).entries.map(\.position) == [0, 1, 2, 3], "a deleted entry is shown to no one"
        )
        #expect(await s.conversationMessages().map(\.role) == [.system, .user, .assistant, .user])
        let next = try await h.respond(Self.add("e4", ("system", "s1")), s)
        #expect(next.addedEntries.map(\.position) == [5], "position 4 named the deleted item")
        // A turn after the items sees them, in order.
        #expect(try await h.respond(Harness.request("r2", "go on"), s).status == .completed)
        #expect(
            await s.conversationMessages().map(\.content) == [
                "Be brief.", "hi", "The quic", "u1", "s1", "go on", "The quic",
            ])
    }

    @Test func anEditWaitsForTheRunningTurnAndAWaitingEditCanBeCancelled() async throws {
        let h = try Harness()
        let s = try await h.session()
        let turn = try await h.start(Harness.request("r1", "hi", maxTokens: 40, longRun: true), s)
        let cancelledEdit = Self.add("e0", ("user", "never"))
        try await h.admit(cancelledEdit, s)
        let removed = await s.cancel(requestID: "e0", reason: .cancelRequest)
        #expect(removed?.outcome.status == .cancelled)
        let edit = try await h.respond(Self.add("e1", ("user", "later")), s)
        // By the time the edit is applied the turn has been recorded whole.
        let response = try #require(await s.responses().first)
        #expect(response.status == .completed && response.finishReason == "length")
        #expect(edit.addedEntries.map(\.position) == [3])
        #expect(await turn.value.status == .completed)
        #expect(await s.transcript.map(\.content).contains("never") == false)
    }

    @Test func rejectRefusesAnEditWhileATurnRuns() async throws {
        let h = try Harness()
        let s = try await h.session(onBusy: .reject)
        let turn = try await h.start(Harness.request("r1", "hi", maxTokens: 200, longRun: true), s)
        // The session's own policy, as the server passes it.
        let edit = TurnRequest.editing(.append([.init(role: "user", text: "now")]), id: "e1", onBusy: s.onBusy)
        await #expect(throws: SessionError.busy(activeRequest: "r1")) { try await h.admit(edit, s) }
        _ = await s.cancel(requestID: "r1", reason: .cancelRequest)
        _ = await turn.value
        #expect(try await h.respond(Self.add("e2", ("user", "now")), s).status == .completed)
    }

    @Test func replaceWaitsInsteadOfSupersedingTheTurn() async throws {
        let h = try Harness()
        let s = try await h.session(onBusy: .replace)
        let turn = try await h.start(Harness.request("r1", "hi", maxTokens: 30, longRun: true), s)
        let edit = try await h.respond(
            TurnRequest.editing(.append([.init(role: "user", text: "x")]), id: "e1", onBusy: s.onBusy), s)
        #expect(edit.status == .completed)
        let outcome = await turn.value
        #expect(outcome.status == .completed && outcome.finishReason == .length, "not superseded")
    }

    @Test func deletingCutsTheKeptCacheToWhatTheEditedTranscriptShares() async throws {
        let h = try Harness()
        let s = try await h.session(instructions: "Be brief.")
        #expect(try await h.respond(Harness.request("r1", "first"), s).status == .completed)
        #expect(try await h.respond(Harness.request("r2", "second"), s).status == .completed)
        let before = ScriptedBackend.render(.conversation(instructions: nil, messages: await s.conversationMessages()))
        #expect(try await h.respond(Self.edit("e1", .delete(position: 1)), s).status == .completed)
        let messages = await s.conversationMessages()
        #expect(messages.map(\.content) == ["Be brief.", "The quic", "second", "The quic"])
        let after = ScriptedBackend.render(.conversation(instructions: nil, messages: messages))
        let shared = zip(before, after).prefix { $0 == $1 }.count
        let caches = h.manager.environment.caches
        let kept = try #require(caches.checkOut(s.id, reservingBytes: 0))
        #expect(kept.count == shared && kept.tokens == Array(after.prefix(shared)), "nothing past the deleted entry")
        caches.checkIn(s.id, sequence: kept, bytes: kept.capacity * 1024)
        let next = try await h.respond(Harness.request("r3", "third"), s)
        #expect(next.usage?.cachedTokens == shared)
        let prompt = ScriptedBackend.render(
            .conversation(instructions: nil, messages: messages + [ChatMessage(role: .user, content: "third")]))
        #expect(next.usage?.promptTokens == prompt.count, "the prompt is the edited transcript's")
    }
}
