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
    /// With tools: the answer read by the model's call format (the record then has `steps`).
    let tools: ToolAnswerTracker?
    /// Where the engine writes the answer's log-probabilities, when `include` asked for them
    /// (never with tools: the record then keeps them per snapshot).
    let logprobs: LogprobRecorder?

    init(_ record: ResponseRecord, tools: ToolAnswerTracker? = nil, logprobs: LogprobRecorder? = nil) {
        id = record.response.id
        var record = record
        if tools != nil, record.steps == nil { record.steps = [] }
        if logprobs != nil, record.logprobs == nil { record.logprobs = [] }
        self.tools = tools
        self.logprobs = logprobs
        state = Locked(State(record: record))
    }

    var record: ResponseRecord { state.withLock { $0.record } }

    /// For the engine's events (on its thread): the start of output, then each snapshot's new text.
    func apply(_ event: GenerationEvent) {
        switch event {
        case .queued:
            return
        case .started:
            change { r in Self.start(&r, tools: tools != nil) }
        case .snapshot(let content, let tokens):
            change { r in
                Self.start(&r, tools: tools != nil)
                if let tools {
                    Self.add(tools.update(content, final: false), to: &r, tokens: tokens)
                } else {
                    // The entries first: the events the new text adds carry them.
                    if let logprobs, let have = r.logprobs?.count, tokens > have {
                        r.logprobs? += logprobs.entries(have..<tokens).map(LogprobEntryBody.init)
                    }
                    Self.extend(&r, to: content)
                }
            }
        }
    }

    /// Ends the run: `finish` sets the final fields (status, usage, …); text the snapshots did not
    /// show yet (a held-back suffix released at the end) becomes one last delta. Returns the final record.
    @discardableResult
    func finish(text: String, _ finish: @Sendable (inout ResponseObject) -> Void) -> ResponseRecord {
        if let tools {
            change { r in
                let started = r.started || !text.isEmpty
                if started { Self.start(&r, tools: true) }
                finish(&r.response)
                if started {
                    Self.finishCalls(&r, text: text, tools: tools)
                } else {
                    r.response.output = []
                }
            }
            return record
        }
        change { r in
            if let logprobs {
                // Those spelling the text as it ends (a stop string's are not).
                r.logprobs = LogprobEntryBody.answer(logprobs, text: text)
            }
            if r.started || !text.isEmpty {
                Self.start(&r)
                Self.extend(&r, to: text)
            }
            finish(&r.response)
            if r.started {
                let itemStatus = r.response.status == "completed" ? "completed" : "incomplete"
                r.response.output = [
                    ResponseItem(
                        id: r.outputItemID, status: itemStatus, role: "assistant",
                        content: [.output(r.text, logprobs: r.logprobs)])
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

    private static func start(_ r: inout ResponseRecord, tools: Bool = false) {
        guard !r.started else { return }
        r.started = true
        r.response.status = "in_progress"
        // With tools, items open as they show (`add`).
        guard !tools else { return }
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

    /// With tools: what a snapshot added, as steps. Reasoning opens the reasoning item (it leads
    /// the answer, so that item comes first), text the message item (at its first piece), a
    /// call's first delta its function_call item; each piece is a delta step. `tokens`: the
    /// answer's length in tokens at this snapshot, counted as reasoning while the reasoning grows.
    private static func add(_ delta: ToolAnswerTracker.Delta, to r: inout ResponseRecord, tokens: Int?) {
        if let piece = delta.reasoning {
            var index = r.response.output.firstIndex { $0.type == "reasoning" }
            if index == nil {
                r.response.output.append(.reasoning("", status: "in_progress"))
                index = r.response.output.count - 1
                r.steps?.append(.reasoningAdded(item: index!))
            }
            let i = index!
            let start = r.response.output[i].content[0].text.utf8.count
            r.response.output[i].content[0].text += piece
            r.steps?.append(.reasoning(item: i, start: start, end: start + piece.utf8.count))
            if let tokens { r.reasoningTokens = tokens }
        }
        if delta.reasoningEnded, let i = r.response.output.firstIndex(where: { $0.type == "reasoning" }),
            r.response.output[i].status == "in_progress"
        {
            // Its text is final: the item ends now, as OpenAI's streams end it before the message.
            r.response.output[i].status = "completed"
            r.steps?.append(.reasoningDone(item: i))
            r.steps?.append(.reasoningItemDone(item: i))
        }
        if let piece = delta.content {
            var index = r.response.output.firstIndex { $0.type == "message" }
            if index == nil {
                r.response.output.append(
                    ResponseItem(id: r.outputItemID, status: "in_progress", role: "assistant", content: [.output("")]))
                index = r.response.output.count - 1
                r.steps?.append(.messageAdded(item: index!))
                r.steps?.append(.partAdded(item: index!))
            }
            let i = index!
            let start = r.response.output[i].content[0].text.utf8.count
            r.response.output[i].content[0].text += piece
            r.steps?.append(.text(item: i, start: start, end: start + piece.utf8.count))
        }
        for call in delta.calls {
            if let callID = call.id {
                r.response.output.append(
                    .functionCall(
                        ToolCall(id: callID, name: call.name ?? "", arguments: ""), status: "in_progress"))
                r.steps?.append(.callAdded(item: r.response.output.count - 1))
            }
            guard !call.arguments.isEmpty else { continue }
            let items = r.response.output.indices.filter { r.response.output[$0].type == "function_call" }
            guard call.index < items.count else { continue }
            let i = items[call.index]
            let start = (r.response.output[i].arguments ?? "").utf8.count
            r.response.output[i].arguments = (r.response.output[i].arguments ?? "") + call.arguments
            r.steps?.append(.arguments(item: i, start: start, end: start + call.arguments.utf8.count))
        }
    }

    /// With tools, at the end: the rest of the answer (text held back as possible call markup is
    /// released only when the answer completed), then each item's final status: a call the
    /// answer did not finish (cut off by `max_output_tokens` or a cancel) stays `incomplete`.
    private static func finishCalls(_ r: inout ResponseRecord, text: String, tools: ToolAnswerTracker) {
        let completed = r.response.status == "completed"
        add(tools.update(text, final: completed), to: &r, tokens: r.response.usage?.outputTokens)
        if let tokens = r.reasoningTokens {
            r.response.usage?.outputTokensDetails.reasoningTokens = tokens
        }
        let message = tools.message(
            text, finishReason: completed ? FinishReason.stop.rawValue : FinishReason.length.rawValue)
        let done = Set(message.calls.map(\.id))
        for i in r.response.output.indices {
            // A reasoning item that ended when its reasoning closed keeps its status.
            if r.response.output[i].type == "reasoning", r.response.output[i].status == "completed" { continue }
            if r.response.output[i].type == "function_call" {
                r.response.output[i].status =
                    done.contains(r.response.output[i].callID ?? "") ? "completed" : "incomplete"
            } else {
                r.response.output[i].status = completed ? "completed" : "incomplete"
            }
        }
    }
}
