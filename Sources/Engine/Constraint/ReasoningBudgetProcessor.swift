/// One generation's `ReasoningBudget` at work: where the answer is (before, inside or after its
/// reasoning, or forcing `</think>`), the reasoning tokens counted so far and the last bytes
/// written, enough to see `</think>` across token boundaries.
final class ReasoningBudgetProcessor: LogitsProcessor {
    enum Phase: Equatable {
        /// Only whitespace so far, or a beginning of `<think>`: `head` holds it.
        case before
        /// Inside the reasoning, `count` tokens after its opening.
        case inside(count: Int)
        /// Forcing `closing[next]`.
        case closing(next: Int)
        /// The reasoning is closed, or there is none: only the inner constraint acts.
        case after
    }

    static let open = Array("<think>".utf8)
    static let close = Array("</think>".utf8)

    let budget: Int
    let closing: [Int32]
    let pieces: @Sendable (Int32) -> [UInt8]
    let inner: (any LogitsProcessor)?
    private(set) var phase: Phase
    /// Before: the answer's bytes so far. Inside: the last bytes of the reasoning (at most
    /// `</think>`'s length less one are kept between tokens).
    private var bytes: [UInt8] = []

    init(_ budget: ReasoningBudget, inner: (any LogitsProcessor)?) {
        self.budget = budget.budget
        self.closing = budget.closing
        self.pieces = budget.pieces
        self.inner = inner
        phase = .before
        if budget.startsInReasoning { enterReasoning(with: []) }
    }

    var mustEnd: Bool {
        if case .closing = phase { return false }
        return inner?.mustEnd ?? false
    }

    var canEnd: Bool {
        if case .closing = phase { return false }
        return inner?.canEnd ?? true
    }

    /// While forcing, every token but the next of `</think>` is masked (the inner constraint is
    /// not asked: the budget decides these steps); otherwise the inner constraint masks.
    func process(logits: UnsafeMutableBufferPointer<Float>) {
        guard case .closing(let next) = phase else {
            inner?.process(logits: logits)
            return
        }
        let forced = Int(closing[next])
        for i in logits.indices where i != forced { logits[i] = -.infinity }
        if forced < logits.count, !logits[forced].isFinite { logits[forced] = 0 }
    }

    func accept(token: Int32) -> Bool {
        let allowed = inner?.accept(token: token) ?? true
        switch phase {
        case .closing(let next):
            phase = next + 1 < closing.count ? .closing(next: next + 1) : .after
        case .before:
            bytes += pieces(token)
            let start = bytes.firstIndex { !Self.isSpace($0) } ?? bytes.count
            let rest = bytes[start...]
            if rest.starts(with: Self.open) {
                enterReasoning(with: Array(rest.dropFirst(Self.open.count)))
            } else if !Self.open.starts(with: rest) {
                // Text that is not reasoning: the budget has nothing to bound.
                phase = .after
                bytes = []
            }
        case .inside(let count):
            bytes += pieces(token)
            read(count: count + 1)
        case .after:
            break
        }
        return allowed
    }

    /// The reasoning opened; `tail` is what the opening token wrote after `<think>` (not
    /// counted: the budget counts the tokens after the one that opened it).
    private func enterReasoning(with tail: [UInt8]) {
        bytes = tail
        read(count: 0)
    }

    /// After `count` reasoning tokens, with `bytes` the reasoning's last bytes: closed by the
    /// model, out of budget (forcing starts), or going on.
    private func read(count: Int) {
        if Self.contains(bytes, Self.close) {
            phase = .after
            bytes = []
        } else if count >= budget {
            phase = .closing(next: 0)
            bytes = []
        } else {
            phase = .inside(count: count)
            let keep = Self.close.count - 1
            if bytes.count > keep { bytes.removeFirst(bytes.count - keep) }
        }
    }

    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }
}
