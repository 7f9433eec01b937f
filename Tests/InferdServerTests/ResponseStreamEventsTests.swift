import Engine
import Foundation
import Testing

@testable import InferdServer

/// A response's stream derived from its record (no model): every resumption point gives exactly
/// the original stream's tail, deltas never split a character, and a subscriber gets what it
/// missed, then the live events, each once.
@Suite struct ResponseStreamEventsTests {
    static func run(background: Bool = true) -> ResponseRun {
        let object = ResponseObject(
            id: "resp_test", createdAt: 1, status: background ? "queued" : "in_progress", background: background,
            metadata: [:], model: "m", output: [], store: true, truncation: "disabled")
        return ResponseRun(
            ResponseRecord(response: object, input: [.input(role: "user", text: "hi")], history: [], owner: nil))
    }

    /// Snapshots as the engine sends them: each the whole text so far, growing by whole characters.
    static let snapshots = ["Grüß", "Grüß dich, ", "Grüß dich, 世界", "Grüß dich, 世界 👋🏽", "Grüß dich, 世界 👋🏽!"]

    @Test func everyResumptionPointGivesTheTailWithoutGapOrDuplicate() throws {
        let run = Self.run()
        let live = LockedEvents()
        run.subscribe(after: -1) { live.append($0) }
        run.apply(.queued(position: 1))
        run.apply(.started(promptTokens: 5, cachedTokens: 0))
        for (i, s) in Self.snapshots.enumerated() { run.apply(.snapshot(content: s, completionTokens: i + 1)) }
        // The held-back end of the text comes with the result, as one more delta.
        let final = run.finish(text: Self.snapshots.last! + " Bye.") { o in o.status = "completed" }
        let all = final.events(after: -1)
        #expect(live.events == all)
        #expect(all.map(\.sequenceNumber) == Array(0..<all.count))
        #expect(all.first?.type == "response.created" && all.first?.response?.status == "queued")
        #expect(all.last?.type == "response.completed" && all.last?.isTerminal == true)
        let deltas = all.compactMap(\.delta)
        #expect(deltas.count == Self.snapshots.count + 1)
        #expect(deltas.joined() == "Grüß dich, 世界 👋🏽! Bye.")
        #expect(deltas.allSatisfy { !$0.isEmpty && !$0.contains("\u{FFFD}") })
        for n in -1..<all.count {
            #expect(final.events(after: n) == Array(all.dropFirst(n + 1)), "after \(n)")
        }
        #expect(final.response.output.first?.status == "completed" && final.text.hasSuffix("Bye."))
    }

    @Test func aLateSubscriberGetsWhatItMissedThenLiveEvents() {
        let run = Self.run()
        run.apply(.started(promptTokens: 5, cachedTokens: 0))
        run.apply(.snapshot(content: Self.snapshots[0], completionTokens: 1))
        run.apply(.snapshot(content: Self.snapshots[1], completionTokens: 2))
        let got = LockedEvents()
        run.subscribe(after: 4) { got.append($0) }
        #expect(got.events.map(\.sequenceNumber) == [5])
        #expect(got.events.first?.delta == " dich, ")
        run.apply(.snapshot(content: Self.snapshots[2], completionTokens: 3))
        // A snapshot that does not grow the text adds nothing.
        run.apply(.snapshot(content: Self.snapshots[2], completionTokens: 3))
        run.finish(text: Self.snapshots[2]) { o in o.status = "cancelled" }
        #expect(got.events.map(\.sequenceNumber) == Array(5...10))
        #expect(got.events.last?.type == "response.cancelled")
        #expect(got.events.compactMap(\.delta).joined() == " dich, 世界")
    }

    @Test func aResponseStoppedBeforeItStartedHasOnlyItsEnds() {
        let run = Self.run()
        let final = run.finish(text: "") { o in o.status = "cancelled" }
        #expect(final.events(after: -1).map(\.type) == ["response.created", "response.cancelled"])
        #expect(final.response.output.isEmpty)
    }
}

/// Events a sink received, for tests.
final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [ResponseStreamEvent] = []
    func append(_ e: ResponseStreamEvent) {
        lock.lock()
        list.append(e)
        lock.unlock()
    }
    var events: [ResponseStreamEvent] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}

/// With tools (the generic format, no model): text opens the message item, a call its
/// function_call item; every resumption point gives the original tail; the argument deltas add
/// up to the item's arguments; the record survives the store (encoded and decoded) unchanged.
@Suite struct ResponseToolStreamEventsTests {
    static func run() throws -> ResponseRun {
        let object = ResponseObject(
            id: "resp_tools", createdAt: 1, status: "in_progress", background: false, metadata: [:], model: "m",
            output: [], store: true, truncation: "disabled")
        let format = ToolCallFormatSetting.generic.format(templateSource: nil)
        return ResponseRun(
            ResponseRecord(response: object, input: [.input(role: "user", text: "hi")], history: [], owner: nil),
            tools: ToolAnswerTracker(format: format))
    }

    static let answer = "Checking.\n{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}]}"

    @Test func callsStreamAsItemsAndResumeExactly() throws {
        let run = try Self.run()
        let live = LockedEvents()
        run.subscribe(after: -1) { live.append($0) }
        run.apply(.started(promptTokens: 5, cachedTokens: 0))
        let bytes = Array(Self.answer.utf8)
        for end in stride(from: 3, to: bytes.count, by: 5) {
            run.apply(.snapshot(content: String(decoding: bytes[..<end], as: UTF8.self), completionTokens: end))
        }
        let final = run.finish(text: Self.answer) { o in o.status = "completed" }
        let all = final.events(after: -1)
        #expect(live.events == all)
        #expect(all.map(\.sequenceNumber) == Array(0..<all.count))
        let output = final.response.output
        #expect(output.map(\.type) == ["message", "function_call"], "\(output)")
        #expect(output.first?.text == "Checking." && output.allSatisfy { $0.status == "completed" })
        let call = try #require(output.last)
        #expect(call.name == "get_time" && call.callID?.hasPrefix("call_") == true && call.id.hasPrefix("fc_"))
        let deltas = all.filter { $0.type == "response.function_call_arguments.delta" }
        #expect(deltas.compactMap(\.delta).joined() == call.arguments)
        #expect(deltas.allSatisfy { $0.itemId == call.id && $0.outputIndex == 1 })
        let done = try #require(all.first { $0.type == "response.function_call_arguments.done" })
        #expect(done.arguments == call.arguments && done.name == "get_time")
        let added = try #require(
            all.first { $0.type == "response.output_item.added" && $0.item?.type == "function_call" })
        #expect(added.item?.arguments == "" && added.item?.status == "in_progress")
        #expect(all.filter { $0.type == "response.output_text.delta" }.compactMap(\.delta).joined() == "Checking.")
        #expect(all.last?.type == "response.completed")
        for n in -1..<all.count {
            #expect(final.events(after: n) == Array(all.dropFirst(n + 1)), "after \(n)")
        }
        // What the store keeps renders the same stream.
        let stored = try JSONDecoder().decode(ResponseRecord.self, from: JSONEncoder().encode(final))
        #expect(stored.events(after: -1) == all)
    }

    @Test func aCallCutOffStaysIncomplete() throws {
        let run = try Self.run()
        run.apply(.started(promptTokens: 5, cachedTokens: 0))
        let cut = String(Self.answer.prefix(Self.answer.count - 8))
        run.apply(.snapshot(content: cut, completionTokens: 9))
        let final = run.finish(text: cut) { o in o.status = "incomplete" }
        let calls = final.response.output.filter { $0.type == "function_call" }
        #expect(calls.count == 1 && calls.allSatisfy { $0.status == "incomplete" }, "\(final.response.output)")
        let types = final.events(after: -1).map(\.type)
        #expect(!types.contains("response.function_call_arguments.done") && types.last == "response.incomplete")
    }
}
