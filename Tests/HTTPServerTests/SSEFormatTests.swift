import Testing

@testable import HTTPServer

/// The SSE wire format: named events with ids, and bare `data:` events for OpenAI-style streams.
@Suite struct SSEFormatTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func namedEventsKeepTheirEventAndIdLines() {
        #expect(
            text(SSEFormat.encode(event: "snapshot", id: 3, data: "a\nb"))
                == "event: snapshot\nid: 3\ndata: a\ndata: b\n\n")
        #expect(
            text(SSEFormat.encode(event: "x", id: 1, data: "a\r\nb\rc"))
                == "event: x\nid: 1\ndata: a\ndata: b\ndata: c\n\n")
    }

    @Test func bareDataEventsHaveOnlyDataLines() {
        #expect(text(SSEFormat.encode(data: #"{"a":1}"#)) == "data: {\"a\":1}\n\n")
        #expect(text(SSEFormat.encode(data: "[DONE]")) == "data: [DONE]\n\n")
        #expect(text(SSEFormat.encode(data: "a\nb")) == "data: a\ndata: b\n\n")
    }

    @Test func bareDataEventsAreOrderedNeverConflatedAndTakeNoId() {
        var q = SSEQueue()
        q.send(event: "started", data: "s")
        q.send(data: "one")
        q.send(data: "two")
        q.sendSnapshot(event: "snapshot", data: "x")
        q.send(data: "three")
        q.finish()
        guard case .bytes(let bytes, let events) = q.read(max: 1 << 16) else {
            Issue.record("expected bytes")
            return
        }
        #expect(events == 5)
        #expect(
            text(bytes)
                == "event: started\nid: 1\ndata: s\n\ndata: one\n\ndata: two\n\nevent: snapshot\nid: 2\ndata: x\n\n"
                + "data: three\n\n")
        #expect(q.read(max: 1 << 16) == .end)
        #expect(q.eventsAccepted == 5)
    }

    /// A resumable stream names its events itself (a sequence number, from 0 on a first
    /// connection, from where the client left off on a resumed one); an event without its own id
    /// continues from there.
    @Test func eventsWithTheirOwnIdKeepIt() {
        var q = SSEQueue()
        q.send(event: "response.created", data: "a", id: 7)
        q.send(event: "response.completed", data: "b", id: 8)
        q.send(event: "other", data: "c")
        q.finish()
        guard case .bytes(let bytes, let events) = q.read(max: 1 << 16) else {
            Issue.record("expected bytes")
            return
        }
        #expect(events == 3)
        #expect(
            text(bytes)
                == "event: response.created\nid: 7\ndata: a\n\nevent: response.completed\nid: 8\ndata: b\n\n"
                + "event: other\nid: 9\ndata: c\n\n")
        #expect(q.read(max: 1 << 16) == .end)
    }

    @Test func bareDataIsIgnoredAfterFinish() {
        var q = SSEQueue()
        q.finish()
        q.send(data: "late")
        #expect(q.read(max: 1024) == .end)
    }
}
