import Backend
import Engine
import Sessions
import TestSupport
import Testing

/// Sessions over a backend that keeps no KV cache (the scripted one): each turn is rebuilt from
/// the transcript, and what a session records does not depend on a cache existing.
@Suite struct ScriptedBackendSessionTests {
    @Test func aBackendWithoutACacheGetsTheWholeTranscriptEachTurn() async throws {
        let backend = ScriptedBackend(reply: "Sure.")
        let h = try Harness(backend: backend)
        let s = try await h.session(instructions: "Be brief.")
        let first = try await h.respond(Harness.request("a", "hello"), s)
        let second = try await h.respond(Harness.request("b", "again"), s)
        #expect(first.status == .completed && first.content == "Sure.")
        #expect(second.status == .completed && second.content == "Sure.")

        let requests = backend.requests
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.sequence == nil })
        let expected = ScriptedBackend.render(
            .conversation(
                instructions: "Be brief.",
                messages: [
                    ChatMessage(role: .user, content: "hello"), ChatMessage(role: .assistant, content: "Sure."),
                    ChatMessage(role: .user, content: "again"),
                ]))
        #expect(requests.last?.prompt.tokens == expected)
        // Message-level: the backend is handed the conversation itself, instructions first.
        #expect(
            requests.last?.prompt.input
                == .conversation(
                    instructions: nil,
                    messages: [
                        ChatMessage(role: .system, content: "Be brief."), ChatMessage(role: .user, content: "hello"),
                        ChatMessage(role: .assistant, content: "Sure."), ChatMessage(role: .user, content: "again"),
                    ]))
        #expect(second.usage?.promptTokens == expected.count)
        #expect(second.usage?.cachedTokens == 0)
        #expect(await s.responses().map(\.content) == ["Sure.", "Sure."])
    }

    @Test func aDiscardedTurnIsLeftOutOfTheNextPromptWithoutACache() async throws {
        // "a" runs until it is cancelled; every other request answers at once.
        let backend = ScriptedBackend { request in
            request.label == "a" ? [.text("partial"), .pause(.seconds(60))] : [.text("done")]
        }
        let h = try Harness(backend: backend)
        let s = try await h.session(instructions: nil)
        let rec = Recorder()
        let a = try await h.start(Harness.request("a", "first", onCancel: .discard), s, rec)
        #expect(await eventually { rec.snapshots.contains("partial") })
        a.cancel()
        let cancelled = await a.value
        #expect(cancelled.status == .cancelled)

        let b = try await h.respond(Harness.request("b", "second"), s)
        #expect(b.status == .completed && b.content == "done")
        let expected = ScriptedBackend.render(
            .conversation(instructions: nil, messages: [ChatMessage(role: .user, content: "second")]))
        #expect(backend.requests.last?.prompt.tokens == expected)
        #expect(await s.prompts().map(\.content) == ["second"])
    }

    @Test func aFailedTurnIsRecordedAndTheSessionStaysUsable() async throws {
        let backend = ScriptedBackend { request in
            request.label == "a" ? [.text("x"), .fail(.computeFailed("scripted failure"))] : [.text("fine")]
        }
        let h = try Harness(backend: backend)
        let s = try await h.session()
        let failed = try await h.respond(Harness.request("a"), s)
        #expect(failed.status == .failed)
        guard case .generation(.computeFailed(let why)) = failed.error else {
            Issue.record("expected computeFailed, got \(String(describing: failed.error))")
            return
        }
        #expect(why == "scripted failure")
        let next = try await h.respond(Harness.request("b"), s)
        #expect(next.status == .completed && next.content == "fine")
        // The failed turn is on record but not shown to the backend again.
        #expect(await s.responses().map(\.status) == [.failed, .completed])
        let expected = ScriptedBackend.render(
            .conversation(instructions: "Be brief.", messages: [ChatMessage(role: .user, content: "hello")]))
        #expect(backend.requests.last?.prompt.tokens == expected)
    }
}
