import Foundation
import Testing

@testable import Engine

/// `ReasoningBudget` over a byte vocabulary (token id = byte, as `ScriptedPredictor` speaks):
/// the reasoning is bounded whatever the model would write, `</think>` is forced token by token
/// and fed to the inner constraint, and answers without reasoning are left alone.
@Suite struct ReasoningBudgetTests {
    static let close = Array("</think>".utf8).map { Int32($0) }

    static func budget(_ n: Int, opened: Bool = false, inner: (any GenerationConstraint)? = nil) -> ReasoningBudget {
        ReasoningBudget(
            budget: n, closing: close, startsInReasoning: opened, inner: inner,
            pieces: { $0 < 256 ? [UInt8($0)] : [] })
    }

    /// An inner constraint that allows everything and records what it is asked and told.
    final class Recorder: GenerationConstraint, LogitsProcessor, @unchecked Sendable {
        var identity: String { "recorder" }
        var processed = 0
        var accepted: [Int32] = []
        func makeProcessor() -> any LogitsProcessor { self }
        func process(logits: UnsafeMutableBufferPointer<Float>) { processed += 1 }
        func accept(token: Int32) -> Bool {
            accepted.append(token)
            return true
        }
        var mustEnd: Bool { false }
        var canEnd: Bool { true }
    }

    /// Feeds `text` byte by byte, returning the tokens the processor forced on the way: at each
    /// step, a processor that leaves a single finite logit forces it (and that token is fed
    /// instead of the text's).
    static func run(_ p: any LogitsProcessor, _ text: String, steps: Int? = nil) -> (output: String, forced: Int) {
        var logits = [Float](repeating: 1, count: 257)
        var out: [UInt8] = []
        var forced = 0
        var queue = Array(text.utf8)[...]
        for _ in 0..<(steps ?? queue.count + 16) {
            for i in logits.indices { logits[i] = 1 }
            logits.withUnsafeMutableBufferPointer { p.process(logits: $0) }
            let finite = logits.indices.filter { logits[$0].isFinite }
            let token: Int32
            if finite.count == 1 {
                token = Int32(finite[0])
                forced += 1
            } else {
                guard let next = queue.popFirst() else { break }
                token = Int32(next)
            }
            #expect(p.accept(token: token))
            out.append(UInt8(token))
        }
        return (String(decoding: out, as: UTF8.self), forced)
    }

    @Test func theReasoningIsClosedAfterTheBudget() {
        let (output, forced) = Self.run(Self.budget(5).makeProcessor(), "<think>abcdefghij</think>answer")
        #expect(output.hasPrefix("<think>abcde</think>"), "\(output)")
        #expect(forced == Self.close.count)
    }

    @Test func budgetZeroClosesAtOnceAndLeadingWhitespaceIsAllowed() {
        let (output, forced) = Self.run(Self.budget(0).makeProcessor(), "\n<think>abc")
        #expect(output.hasPrefix("\n<think></think>"), "\(output)")
        #expect(forced == Self.close.count)
    }

    @Test func aPromptOpenedReasoningCountsFromTheFirstToken() {
        let (output, _) = Self.run(Self.budget(3, opened: true).makeProcessor(), "abcdefg")
        #expect(output.hasPrefix("abc</think>"), "\(output)")
        let (zero, _) = Self.run(Self.budget(0, opened: true).makeProcessor(), "abc")
        #expect(zero.hasPrefix("</think>"), "\(zero)")
    }

    @Test func reasoningThatEndsInTimeOrNoReasoningIsLeftAlone() {
        for text in ["<think>ab</think>answer that runs long", "answer <think>not reasoning at all</think>", ""] {
            let (output, forced) = Self.run(Self.budget(10).makeProcessor(), text)
            #expect(output == text && forced == 0, "\(output)")
        }
    }

    @Test func forcedTokensAreFedToTheInnerConstraintWhichDoesNotMaskThem() {
        let inner = Recorder()
        let p = Self.budget(2, inner: inner).makeProcessor()
        let (output, forced) = Self.run(p, "<think>abcdef")
        #expect(output == "<think>ab</think>cdef", "\(output)")
        #expect(inner.accepted.map { UInt8($0) } == Array(output.utf8))
        // Asked for every step but the forced ones.
        #expect(inner.processed == output.utf8.count - forced + 1)
        #expect(!p.mustEnd && p.canEnd)
    }

    @Test func whileForcingTheAnswerCannotEnd() {
        let p = Self.budget(1, opened: true).makeProcessor()
        #expect(p.accept(token: Int32(UInt8(ascii: "a"))))
        #expect(!p.canEnd && !p.mustEnd)
    }

    @Test func identityNamesTheBudgetAndTheInnerConstraint() {
        #expect(Self.budget(3).identity != Self.budget(4).identity)
        #expect(Self.budget(3).identity != Self.budget(3, opened: true).identity)
        #expect(Self.budget(3, inner: Recorder()).identity.hasSuffix("recorder"))
    }

    /// Through the engine's decode loop: a model that would think for 40 tokens writes 5.
    @Test func theEngineForcesTheCloseOfALongThought() async throws {
        let thought = String(repeating: "x", count: 40)
        let p = ScriptedPredictor(script: "<think>\(thought)</think>done")
        var r = GenerationRequest(promptTokens: ScriptedPredictor.prompt("q"), maxTokens: 120, sampling: .greedy)
        r.constraint = Self.budget(5)
        let bounded = try await p.runner().generate(r)
        #expect(bounded.content.hasPrefix("<think>xxxxx</think>"), "\(bounded.content)")
        #expect(bounded.content.count > "<think>xxxxx</think>".count, "the answer goes on after the close")
        // Without a budget the same model thinks on.
        r.constraint = nil
        let free = try await p.runner().generate(r)
        #expect(free.content == "<think>\(thought)</think>done")
    }
}
