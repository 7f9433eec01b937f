import Engine
import Sessions
import Telemetry

/// A response while it is generated: its record, kept up to date from the generation's events
/// (the output text is the newest snapshot), and the streams that follow it. Every change that
/// adds events passes them to every subscriber under the lock, so each subscriber sees events
/// in order, each once, whichever thread reports. A subscriber first gets the events after the
/// one it names (what it missed), then live ones: that is how a background response's stream is
/// resumed. Sinks must not block (an `EventStream` or an `AsyncStream` continuation).
final class ResponseRun: Sendable {
    typealias Sink = @Sendable (ResponseStreamEvent) -> Void

    private struct State {
        var record: ResponseRecord
        var sinks: [Int: Sink] = [:]
        var nextSink = 0
    }

    let id: String
    private let state: Locked<State>

    init(_ record: ResponseRecord) {
        id = record.response.id
        state = Locked(State(record: record))
    }

    var record: ResponseRecord { state.withLock { $0.record } }

    /// For the engine's events (on its thread): the start of output, then each snapshot's new text.
    func apply(_ event: GenerationEvent) {
        switch event {
        case .queued:
            return
        case .started:
            change { r in Self.start(&r) }
        case .snapshot(let content, _):
            change { r in
                Self.start(&r)
                Self.extend(&r, to: content)
            }
        }
    }

    /// Ends the run: `finish` sets the final fields (status, usage, …); text the snapshots did not
    /// show yet (a held-back suffix released at the end) becomes one last delta. Returns the final record.
    @discardableResult
    func finish(text: String, _ finish: @Sendable (inout ResponseObject) -> Void) -> ResponseRecord {
        change { r in
            if r.started || !text.isEmpty {
                Self.start(&r)
                Self.extend(&r, to: text)
            }
            finish(&r.response)
            if r.started {
                let itemStatus = r.response.status == "completed" ? "completed" : "incomplete"
                r.response.output = [
                    ResponseItem(
                        id: r.outputItemID, status: itemStatus, role: "assistant", content: [.output(r.text)])
                ]
            } else {
                r.response.output = []
            }
        }
        return record
    }

    /// Sends `sink` the events after `after` (-1: from the first), then every later one. Returns
    /// a token for `unsubscribe`; nothing more follows the terminal event.
    @discardableResult
    func subscribe(after: Int, _ sink: @escaping Sink) -> Int {
        state.withLock { s in
            for e in s.record.events(after: after) { sink(e) }
            let token = s.nextSink
            s.nextSink += 1
            if !s.record.response.isFinished { s.sinks[token] = sink }
            return token
        }
    }

    func unsubscribe(_ token: Int) {
        state.withLock { s in s.sinks[token] = nil }
    }

    /// Applies `update` and sends the events it added.
    private func change(_ update: (inout ResponseRecord) -> Void) {
        state.withLock { s in
            let before = s.record.eventCount
            update(&s.record)
            let new = s.record.events(after: before - 1)
            guard !new.isEmpty else { return }
            for sink in s.sinks.values {
                for e in new { sink(e) }
            }
            if s.record.response.isFinished { s.sinks.removeAll() }
        }
    }

    private static func start(_ r: inout ResponseRecord) {
        guard !r.started else { return }
        r.started = true
        r.response.status = "in_progress"
        r.response.output = [
            ResponseItem(id: r.outputItemID, status: "in_progress", role: "assistant", content: [.output("")])
        ]
    }

    /// Snapshots only ever grow and never split a character, so the new text is a suffix.
    private static func extend(_ r: inout ResponseRecord, to content: String) {
        let current = r.text
        guard content.utf8.count > current.utf8.count, content.utf8.starts(with: current.utf8) else { return }
        r.response.output[0].content[0].text = content
        r.deltaEnds.append(content.utf8.count)
    }
}
