/// A response's stream, derived from its record alone: `response.created`; once it started,
/// `response.in_progress`, `response.output_item.added`, `response.content_part.added` and one
/// `response.output_text.delta` per recorded delta end; once finished (after it started),
/// `response.output_text.done`, `response.content_part.done`, `response.output_item.done`;
/// then the terminal event. Event `k` is the same whenever it is rendered, so a stream resumed
/// after event N (a background response's, or a stored one's) is the original stream's tail.
extension ResponseRecord {
    /// How many events the stream has so far.
    var eventCount: Int {
        1 + (started ? 3 + deltaEnds.count : 0) + (response.isFinished ? (started ? 4 : 1) : 0)
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
                let utf8 = text.utf8
                let start = min(i == 0 ? 0 : deltaEnds[i - 1], utf8.count)
                let end = min(deltaEnds[i], utf8.count)
                // Offsets into native UTF-8: no copy of the text per event.
                let from = utf8.index(utf8.startIndex, offsetBy: start)
                let to = utf8.index(utf8.startIndex, offsetBy: max(start, end))
                e.type = "response.output_text.delta"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.delta = String(decoding: utf8[from..<to], as: UTF8.self)
                e.logprobs = []
                return e
            case lastOpen + 1:
                e.type = "response.output_text.done"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.text = text
                e.logprobs = []
                return e
            case lastOpen + 2:
                e.type = "response.content_part.done"
                e.itemId = outputItemID
                e.contentIndex = 0
                e.part = .output(text)
                return e
            case lastOpen + 3:
                e.type = "response.output_item.done"
                e.item = response.output.first
                return e
            default:
                break
            }
        }
        e.outputIndex = nil
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
