import Engine
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Sessions

/// Two servers (two `SessionManager`s, each with its own PostgreSQL store) on one database.
@Suite(.enabled(if: TestPostgres.enabled, "needs PostgreSQL: make postgres-test"))
struct SharedStoreTests {
    @Test func aTurnLeaseIsHeldByOneStoreAtATime() async throws {
        let url = try TestPostgres.freshDatabase()
        let a = try PostgresSessionStore.open(url: url, password: nil)
        let b = try PostgresSessionStore.open(url: url, password: nil)
        let held = try #require(try await a.tryTurnLease(session: "s1"))
        #expect(try await b.tryTurnLease(session: "s1") == nil, "held by a")
        #expect(try await a.tryTurnLease(session: "s1") == nil, "a second turn on the same server waits too")
        let other = try #require(try await b.tryTurnLease(session: "s2"), "another session is free")
        await other.release()
        await held.release()
        let next = try #require(try await b.tryTurnLease(session: "s1"), "free once released")
        await next.release()
    }

    @Test func aDeadHoldersLeaseIsFreedAndItsResponseRecordedInterrupted() async throws {
        let url = try TestPostgres.freshDatabase()
        let store = try PostgresSessionStore.open(url: url, password: nil)
        try await store.createSession(StoredSession(id: "s1", created: 1, onBusy: .queue, options: nil, entries: []))
        try await store.beginTurn(
            session: "s1", prompt: TranscriptEntry(position: 0, kind: .prompt, content: "hi", requestID: "r1"),
            response: TranscriptEntry(position: 1, kind: .response, content: "", requestID: "r1", status: .inProgress))
        // Another process holds the session's lock, as a replica running the turn would, idle
        // (a replica holds it on a connection that runs no query while it generates); then dies.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["psql", url, "-q"]
        let input = Pipe()
        holder.standardInput = input
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        input.fileHandleForWriting.write(
            Data("SELECT pg_advisory_lock(\(PostgresSessionStore.lockNamespace), hashtext('s1'));\n".utf8))
        let deadline = Date().addingTimeInterval(10)
        let held =
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = \(PostgresSessionStore.lockNamespace)"
            // pg_locks is server-wide: other suites' leases, in their own databases, do not count.
            + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        while try TestPostgres.run("/usr/bin/env", ["psql", url, "-tAc", held]).hasPrefix("0"), Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await store.tryTurnLease(session: "s1") == nil, "the holder has it")
        #expect(try await store.loadSession("s1")?.entries[1].status == .inProgress, "its turn runs: not interrupted")
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        var lease: (any TurnLease)?
        while lease == nil && Date() < deadline {
            lease = try await store.tryTurnLease(session: "s1")
            if lease == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let taken = try #require(lease, "a killed holder's lock is released by the server")
        #expect(try await store.loadSession("s1")?.entries[1].status == .interrupted)
        await taken.release()
    }

    @Test func aSessionCreatedOnOneServerIsUsedOnTheOther() async throws {
        let url = try TestPostgres.freshDatabase()
        let model = FakeModel()
        let a = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let b = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let onA = try await a.manager.create(instructions: "Be brief.", onBusy: .reject, options: "{}", owner: "k1")
        #expect(b.manager.session(onA.id) == nil, "not loaded at b's start")
        let onB = try #require(try await b.manager.find(onA.id))
        #expect(onB.owner == "k1" && onB.onBusy == .reject && onB.options == "{}")
        #expect(try await b.respond(Harness.request("r1", "hi"), onB).status == .completed)
        #expect(try await a.respond(Harness.request("r2", "again"), onA).status == .completed)
        #expect(try await b.respond(Harness.request("r3", "more"), onB).status == .completed)
        // a met the session with earlier turns and no cache of its own: rebuilt from the transcript.
        // b kept its cache from r1 and only extended it.
        let rebuilds = "inferd_session_cache_rebuilds_total"
        #expect(a.manager.environment.metrics.value(rebuilds) == 1)
        #expect(b.manager.environment.metrics.value(rebuilds) == nil)
        // Each server saw the other's turns: one transcript, positions in order, nothing lost.
        let stored = try #require(try await a.manager.environment.store.loadSession(onA.id))
        #expect(stored.entries.map(\.position) == Array(0..<7))
        #expect(stored.entries.compactMap { $0.kind == .prompt ? $0.content : nil } == ["hi", "again", "more"])
        #expect(stored.entries.allSatisfy { $0.kind != .response || $0.status == .completed })
        #expect(
            await onB.conversationMessages().map(\.content) == [
                "Be brief.", "hi", "The quic", "again", "The quic", "more", "The quic",
            ])
        _ = try await a.manager.find(onA.id)
        #expect(await onA.transcript == stored.entries, "a re-reads it")
        // b's list and per-owner count follow the store: a session a creates shows up there.
        let second = try await a.manager.create(instructions: nil, onBusy: .queue, options: nil, owner: "k1")
        #expect(b.manager.count(ownedBy: "k1") == 1)
        try await b.manager.synchronize()
        #expect(b.manager.count(ownedBy: "k1") == 2)
        #expect(Set(b.manager.all.map(\.id)) == [onA.id, second.id])
        // Deleted through a: gone on b too.
        #expect(try await a.manager.delete(onA.id))
        #expect(try await b.manager.find(onA.id) == nil)
        #expect(b.manager.session(onA.id) == nil)
        #expect(try await a.manager.delete(second.id))
        try await b.manager.synchronize()
        #expect(b.manager.count == 1, "a session younger than the list read is kept (it may be new here)")
        try await Task.sleep(for: .seconds(2))
        try await b.manager.synchronize()
        #expect(b.manager.count == 0)
    }

    @Test func anEditOnOneServerWaitsForTheOthersTurnAndItsNextTurnSeesIt() async throws {
        let url = try TestPostgres.freshDatabase()
        let model = FakeModel()
        let a = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let b = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let onA = try await a.manager.create(instructions: "Be brief.", onBusy: .queue, options: nil)
        let onB = try #require(try await b.manager.find(onA.id))
        #expect(try await b.respond(Harness.request("r1", "hi"), onB).status == .completed)
        let running = try await b.start(Harness.request("r2", "long", maxTokens: 60, longRun: true), onB)
        let store = a.manager.environment.store
        let deadline = Date().addingTimeInterval(10)
        while try await store.loadSession(onA.id)?.entries.count ?? 0 < 5, Date() < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        // b holds the session's lease while r2 runs: a's edit waits for it, then lands after r2.
        let edit = try await a.respond(TranscriptEditTests.add("e1", ("user", "from a")), onA)
        #expect(edit.status == .completed && edit.addedEntries.map(\.position) == [5])
        let stored = try #require(try await store.loadSession(onA.id))
        #expect(stored.entries[4].requestID == "r2" && stored.entries[4].status == .completed, "r2 was recorded first")
        #expect(await running.value.status == .completed)
        // A deletion on a: b's next turn renders the edited transcript, and its kept cache (from
        // r2, which held the deleted prompt) serves only the prefix both prompts share.
        let r2Prompt = ScriptedBackend.render(
            .conversation(instructions: nil, messages: await onB.conversationMessages().dropLast()))
        #expect(try await a.respond(TranscriptEditTests.edit("e2", .delete(position: 1)), onA).status == .completed)
        let edited = await onA.conversationMessages()
        #expect(edited.map(\.content).contains("hi") == false && edited.last?.content == "from a")
        let next = try await b.respond(Harness.request("r3", "third"), onB)
        let prompt = ScriptedBackend.render(
            .conversation(instructions: nil, messages: edited + [ChatMessage(role: .user, content: "third")]))
        #expect(next.usage?.promptTokens == prompt.count)
        #expect(next.usage?.cachedTokens == zip(r2Prompt, prompt).prefix { $0 == $1 }.count)
    }

    @Test func concurrentTurnsOfOneSessionOnTwoServersNeverOverlap() async throws {
        let url = try TestPostgres.freshDatabase()
        let model = FakeModel(stepDelay: 0.003)
        let a = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let b = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let sa = try await a.manager.create(instructions: "Be brief.", onBusy: .queue, options: nil)
        let sb = try #require(try await b.manager.find(sa.id))
        var tasks: [Task<TurnOutcome, Never>] = []
        for i in 0..<4 {
            tasks.append(try await a.start(Harness.request("a\(i)", "from a \(i)", maxTokens: 12, longRun: true), sa))
            tasks.append(try await b.start(Harness.request("b\(i)", "from b \(i)", maxTokens: 12, longRun: true), sb))
        }
        var outcomes: [TurnOutcome] = []
        for t in tasks { outcomes.append(await t.value) }
        #expect(outcomes.allSatisfy { $0.status == .completed }, "\(outcomes.map(\.status))")
        // One model serves both servers here. Each turn computes on one sequence (a server's
        // session keeps its own), so turns run one at a time exactly when the model's steps come
        // in at most one unbroken run per turn; two overlapping turns would alternate step by step.
        // (The runner's job count is no measure: a job leaves it just after its result is out.)
        let steps = model.predictor.steps.withLock { $0 }
        let runs = zip(steps, steps.dropFirst()).filter { $0 != $1 }.count + 1
        #expect(steps.count >= 8 * 12 && runs <= tasks.count, "\(runs) runs of steps for \(tasks.count) turns")
        let stored = try #require(try await a.manager.environment.store.loadSession(sa.id))
        #expect(stored.entries.count == 17 && Set(stored.entries.map(\.position)).count == 17)
        // Every prompt is followed by its own response.
        for (p, r) in zip(stored.entries.dropFirst().enumerated(), stored.entries.dropFirst(2)) where p.offset % 2 == 0
        {
            #expect(p.element.kind == .prompt && r.kind == .response && p.element.requestID == r.requestID)
        }
    }

    @Test func rejectRefusesWhileAnotherServerRunsTheSession() async throws {
        let url = try TestPostgres.freshDatabase()
        let model = FakeModel(stepDelay: 0.005)
        let a = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let b = try Harness(model: model, store: try PostgresSessionStore.open(url: url, password: nil))
        let sa = try await a.manager.create(instructions: nil, onBusy: .queue, options: nil)
        let sb = try #require(try await b.manager.find(sa.id))
        let rec = Recorder()
        let long = try await a.start(Harness.request("long", maxTokens: 200, longRun: true), sa, rec)
        while !rec.started { try await Task.sleep(for: .milliseconds(2)) }
        let refused = try await b.respond(Harness.request("x", onBusy: .reject), sb)
        #expect(refused.status == .failed && refused.error == .busy(activeRequest: nil))
        // queue waits for the lease, then runs after the long turn.
        let queued = try await b.start(Harness.request("q", "after"), sb)
        _ = await sa.cancel(requestID: "long", reason: .cancelRequest)
        #expect(await long.value.status == .cancelled)
        #expect(await queued.value.status == .completed)
        let stored = try #require(try await b.manager.environment.store.loadSession(sa.id))
        #expect(stored.entries.compactMap(\.requestID) == ["long", "long", "q", "q"], "the refused one left nothing")
    }
}
