import StructuredOutput

/// The block events of a Messages stream, derived from what each snapshot adds (a
/// `ToolAnswerTracker.Delta`: new reasoning, new text, new call fragments). A state machine with
/// no I/O: it keeps which block is open, opens the next one when the kind of what arrives
/// changes (thinking, text, each call), and closes the last at the end. Deltas come from whole
/// snapshots, so no event splits a character, and text held back as a possible stop sequence or
/// call markup is never sent as text.
struct MessagesStreamBuilder: Sendable {
    enum Kind: Equatable, Sendable {
        case text
        case thinking
        case call(Int)
    }

    private(set) var open: (index: Int, kind: Kind)?
    private var next = 0

    /// The events for one delta: thinking first, then text, then each call's opening and input.
    mutating func events(for delta: ToolAnswerTracker.Delta) -> [MessagesStreamEvent] {
        var out: [MessagesStreamEvent] = []
        if let reasoning = delta.reasoning, !reasoning.isEmpty {
            let index = enter(.thinking, block: .thinking(""), into: &out)
            out.append(.thinkingDelta(index: index, thinking: reasoning))
        }
        if let content = delta.content, !content.isEmpty {
            let index = enter(.text, block: .text(""), into: &out)
            out.append(.textDelta(index: index, text: content))
        }
        for call in delta.calls {
            let kind = Kind.call(call.index)
            if open?.kind != kind {
                let id = MessageBlock.toolUseID(call.id ?? "")
                _ = enter(kind, block: .toolUse(id: id, name: call.name ?? "", input: .object([])), into: &out)
            }
            if !call.arguments.isEmpty, let index = open?.index {
                out.append(.inputJSONDelta(index: index, partialJSON: call.arguments))
            }
        }
        return out
    }

    /// Text alone (an answer read without a call format).
    mutating func events(forText piece: String) -> [MessagesStreamEvent] {
        events(for: ToolAnswerTracker.Delta(content: piece))
    }

    /// Closes the open block, if any.
    mutating func close() -> [MessagesStreamEvent] {
        guard let current = open else { return [] }
        open = nil
        return [.blockStop(index: current.index)]
    }

    /// Makes `kind` the open block (closing another first) and returns its index.
    private mutating func enter(_ kind: Kind, block: MessageBlock, into out: inout [MessagesStreamEvent]) -> Int {
        if let current = open, current.kind == kind { return current.index }
        out += close()
        let index = next
        next += 1
        open = (index, kind)
        out.append(.blockStart(index: index, block: block))
        return index
    }
}
