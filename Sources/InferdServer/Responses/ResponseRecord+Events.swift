/// A response's stream, derived from its record alone: `response.created`; once it started,
/// `response.in_progress`, `response.output_item.added`, `response.content_part.added` and one
/// `response.output_text.delta` per recorded delta end; once finished (after it started),
/// `response.output_text.done`, `response.content_part.done`, `response.output_item.done`;
/// then the terminal event. With tools, the events after `response.in_progress` are the
/// recorded steps (items open as they show), and once finished each item's done events in
/// output order (a function call's `response.function_call_arguments.done`, unless it was cut
/// off, then `response.output_item.done`). A thinking model's reasoning item streams as
/// `response.output_item.added`, `response.reasoning_text.delta` per piece, and once finished
/// `response.reasoning_text.done` and `response.output_item.done` as soon as the reasoning closes
/// (before the text and calls after it), or with the other items at the end if it never closed
/// (its one `reasoning_text` part has no part events). Event `k` is the same whenever it is rendered, so a
/// stream resumed after event N (a background response's, or a stored one's) is the original
/// stream's tail.
extension ResponseRecord {
    /// How many events the stream has so far.
    var eventCount: Int {
        if let steps {
            return 1 + (started ? 1 + steps.count : 0)
                + (response.isFinished ? (started ? doneEvents.count : 0) + 1 : 0)
        }
        return 1 + (started ? 3 + deltaEnds.count : 0) + (response.isFinished ? (started ? 4 : 1) : 0)
    }

    /// The events after `after` (-1: all), as far as they exist.
    func events(after: Int) -> [ResponseStreamEvent] {
        let first = max(after + 1, 0)
        guard first < eventCount else { return [] }
        return (first..<eventCount).map(event(at:))
    }

    func event(at k: Int) -> ResponseStreamEvent {
        var e = ResponseStreamEvent(type: "", sequenceNumber: k)
        if k == 0 {
            e.type = "response.created"
            e.response = initialObject(status: response.background ? "queued" : "in_progress")
            return e
        }
        if let steps {
            if started, k == 1 {
                e.type = "response.in_progress"
                e.response = initialObject(status: "in_progress")
                return e
            }
            if started, k - 2 < steps.count {
                return stepEvent(steps[k - 2], k)
            }
            let done = started ? doneEvents : []
            let d = k - 2 - steps.count
            if started, d >= 0, d < done.count {
                return doneEvent(done[d], k)
            }
            return terminal(k)
        }
        let deltas = started ? deltaEnds.count : 0
        let lastOpen = started ? 3 + deltas : 0
        if started {
            e.outputIndex = 0
            switch k {
            case 1:
                e.outputIndex = nil
                e.type = "response.in_progress"
                e.response = initialObject(status: "in_progress")
                return e
            case 2:
                e.type = "response.output_item.added"
                e.item = ResponseItem(id: outputItemID, status: "in_progress", role: "assistant", content: [])
                return e
            case 3:
                e.type = "response.content_part.added"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.part = .output("")
                return e
            case _ where k >= 4 && k <= lastOpen:
                let i = k - 4
                let start = i == 0 ? 0 : deltaEnds[i - 1]
                e.type = "response.output_text.delta"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.delta = Self.slice(text, start, deltaEnds[i])
                e.logprobs = logprobs.map { LogprobEntryBody.slice($0, start, deltaEnds[i]) } ?? []
                return e
            case lastOpen + 1:
                e.type = "response.output_text.done"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.text = text
                e.logprobs = logprobs ?? []
                return e
            case lastOpen + 2:
                e.type = "response.content_part.done"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.part = .output(text, logprobs: logprobs)
                return e
            case lastOpen + 3:
                e.type = "response.output_item.done"
                e.item = response.output.first
                return e
            default:
                break
            }
        }
        return terminal(k)
    }

    func terminal(_ k: Int) -> ResponseStreamEvent {
        var e = ResponseStreamEvent(type: "", sequenceNumber: k)
        e.type =
            switch response.status {
            case "completed": "response.completed"
            case "incomplete": "response.incomplete"
            case "cancelled": "response.cancelled"
            default: "response.failed"
            }
        e.response = response
        return e
    }

    /// Bytes `start..<end` of `text` (offsets into native UTF-8: no copy of the text per event).
    static func slice(_ text: String, _ start: Int, _ end: Int) -> String {
        let utf8 = text.utf8
        let s = min(start, utf8.count)
        let t = min(max(s, end), utf8.count)
        let from = utf8.index(utf8.startIndex, offsetBy: s)
        let to = utf8.index(utf8.startIndex, offsetBy: t)
        return String(decoding: utf8[from..<to], as: UTF8.self)
    }

    /// A step's event (tools).
    func stepEvent(_ step: StreamStep, _ k: Int) -> ResponseStreamEvent {
        var e = ResponseStreamEvent(type: "", sequenceNumber: k)
        switch step {
        case .messageAdded(let i):
            e.type = "response.output_item.added"
            e.outputIndex = i
            e.item = ResponseItem(id: item(i).id, status: "in_progress", role: "assistant", content: [])
        case .partAdded(let i):
            e.type = "response.content_part.added"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.part = .output("")
        case .text(let i, let start, let end):
            e.type = "response.output_text.delta"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.delta = Self.slice(item(i).text, start, end)
            e.logprobs = []
        case .callAdded(let i):
            var added = item(i)
            added.status = "in_progress"
            added.arguments = ""
            e.type = "response.output_item.added"
            e.outputIndex = i
            e.item = added
        case .arguments(let i, let start, let end):
            e.type = "response.function_call_arguments.delta"
            e.outputIndex = i
            e.itemId = item(i).id
            e.delta = Self.slice(item(i).arguments ?? "", start, end)
        case .reasoningAdded(let i):
            var added = item(i)
            added.status = "in_progress"
            added.content = []
            e.type = "response.output_item.added"
            e.outputIndex = i
            e.item = added
        case .reasoning(let i, let start, let end):
            e.type = "response.reasoning_text.delta"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.delta = Self.slice(item(i).text, start, end)
        case .reasoningDone(let i):
            return doneEvent(.reasoning(i), k)
        case .reasoningItemDone(let i):
            return doneEvent(.item(i), k)
        }
        return e
    }

    /// The events that end each output item once the response finished (tools).
    enum DoneEvent {
        case text(Int), part(Int), arguments(Int), reasoning(Int), item(Int)
    }

    var doneEvents: [DoneEvent] {
        var out: [DoneEvent] = []
        for (i, item) in response.output.enumerated() {
            if item.type == "function_call" {
                if item.status == "completed" { out.append(.arguments(i)) }
            } else if item.type == "reasoning" {
                // Ended already, as a step, when the reasoning closed.
                if steps?.contains(.reasoningItemDone(item: i)) == true { continue }
                out.append(.reasoning(i))
            } else {
                out += [.text(i), .part(i)]
            }
            out.append(.item(i))
        }
        return out
    }

    func doneEvent(_ done: DoneEvent, _ k: Int) -> ResponseStreamEvent {
        var e = ResponseStreamEvent(type: "", sequenceNumber: k)
        switch done {
        case .text(let i):
            e.type = "response.output_text.done"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.text = item(i).text
            e.logprobs = []
        case .part(let i):
            e.type = "response.content_part.done"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.part = .output(item(i).text)
        case .arguments(let i):
            e.type = "response.function_call_arguments.done"
            e.outputIndex = i
            e.itemId = item(i).id
            e.name = item(i).name
            e.arguments = item(i).arguments
        case .reasoning(let i):
            e.type = "response.reasoning_text.done"
            e.outputIndex = i
            e.itemId = item(i).id
            e.contentIndex = 0
            e.text = item(i).text
        case .item(let i):
            e.type = "response.output_item.done"
            e.outputIndex = i
            e.item = item(i)
        }
        return e
    }

    /// Output item `i` (an empty message if it is gone, which a consistent record never has).
    func item(_ i: Int) -> ResponseItem {
        i < response.output.count
            ? response.output[i] : ResponseItem(id: outputItemID, status: "incomplete", role: "assistant", content: [])
    }

    /// The output text so far.
    var text: String { response.outputText }

    /// The object as it was before any output: what `response.created` and `response.in_progress` carry.
    func initialObject(status: String) -> ResponseObject {
        var o = response
        o.status = status
        o.output = []
        o.usage = nil
        o.error = nil
        o.incompleteDetails = nil
        o.completedAt = nil
        return o
    }
}
