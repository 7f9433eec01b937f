import Engine
import Foundation
import Testing

@testable import Sessions

@Suite struct KVCacheBudgetTests {
    final class Seq: PredictorSequence, @unchecked Sendable {
        var tokens: [Int32] = []
        var count: Int { tokens.count }
        let capacity = 10
        func truncate(to length: Int) {}
    }

    @Test func dropsTheLeastRecentlyUsedIdleCache() {
        let b = KVCacheBudget(budgetBytes: 300)
        #expect(b.checkOut("a", reservingBytes: 100) == nil)
        #expect(b.checkIn("a", sequence: Seq(), bytes: 100).isEmpty)
        _ = b.checkOut("b", reservingBytes: 100)
        #expect(b.checkIn("b", sequence: Seq(), bytes: 100).isEmpty)
        // Using a again makes b the oldest.
        let a = b.checkOut("a", reservingBytes: 100)
        #expect(a != nil)
        b.checkIn("a", sequence: a!, bytes: 100)
        _ = b.checkOut("c", reservingBytes: 150)
        #expect(b.checkIn("c", sequence: Seq(), bytes: 150) == ["b"])
        #expect(!b.hasCache("b") && b.hasCache("a") && b.hasCache("c"))
        #expect(b.usedBytes == 250)
    }

    @Test func aCacheInUseIsNeverDropped() {
        let b = KVCacheBudget(budgetBytes: 100)
        _ = b.checkOut("busy", reservingBytes: 80)
        _ = b.checkOut("x", reservingBytes: 50)
        #expect(b.checkIn("x", sequence: Seq(), bytes: 50) == ["x"], "only idle caches go")
    }
}

@Suite struct TranscriptStoreTests {
    static func tempDir() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-store-\(UUID().uuidString)")
        return dir.path
    }

    @Test func roundTripsAndMarksInFlightResponsesInterrupted() throws {
        let dir = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try TranscriptStore.open(dataDir: dir)
            try store.createSession(
                StoredSession(
                    id: "s1", created: 5, onBusy: .replace, options: "{\"temperature\":0}",
                    entries: [TranscriptEntry(position: 0, kind: .instructions, content: "Be brief. ünïcödé")]))
            try store.beginTurn(
                session: "s1", prompt: TranscriptEntry(position: 1, kind: .prompt, content: "hi", requestID: "r1"),
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "", requestID: "r1", status: .inProgress))
            try store.finishTurn(
                session: "s1",
                response: TranscriptEntry(
                    position: 2, kind: .response, content: "hello", requestID: "r1", status: .completed,
                    finishReason: "stop"))
            try store.beginTurn(
                session: "s1", prompt: TranscriptEntry(position: 3, kind: .prompt, content: "more", requestID: "r2"),
                response: TranscriptEntry(
                    position: 4, kind: .response, content: "", requestID: "r2", status: .inProgress))
        }
        let reopened = try TranscriptStore.open(dataDir: dir)
        #expect(reopened.interruptedOnOpen == 1)
        let sessions = try reopened.loadAll()
        #expect(sessions.count == 1)
        let s = try #require(sessions.first)
        #expect(s.onBusy == .replace && s.options == "{\"temperature\":0}")
        #expect(s.entries.map(\.kind) == [.instructions, .prompt, .response, .prompt, .response])
        #expect(s.entries[0].content == "Be brief. ünïcödé")
        #expect(s.entries[2].status == .completed && s.entries[2].content == "hello")
        #expect(s.entries[4].status == .interrupted)
        try reopened.removeEntries(session: "s1", positions: [3, 4])
        try reopened.deleteSession("s1")
        #expect(try reopened.loadAll().isEmpty)
    }

    @Test func aCorruptDatabaseIsAStartUpError() throws {
        let dir = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: dir).appendingPathComponent(TranscriptStore.fileName))
        #expect(throws: StoreError.self) { try TranscriptStore.open(dataDir: dir) }
        do {
            _ = try TranscriptStore.open(dataDir: dir)
        } catch {
            #expect(error.description.contains("unusable") || error.description.contains("not a database"))
        }
    }

    @Test func anUnwritableDataDirIsAStartUpError() throws {
        let file = Self.tempDir()
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: StoreError.self) { try TranscriptStore.open(dataDir: file + "/data") }
    }
}
