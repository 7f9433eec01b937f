import Backend
import Testing

/// The one limits value every route and the sessions check against, without I/O.
@Suite struct GenerationLimitsTests {
    let limits = GenerationLimits(defaultMaxTokens: 512, maxTokensLimit: 100, maxPromptTokens: 50)

    @Test func aMissingBudgetIsTheDefaultClampedToTheLimitAndTheRoomLeft() throws {
        #expect(try limits.budget(promptTokens: 10, requestedMaxTokens: nil, contextLength: 1000) == 100)
        #expect(try limits.budget(promptTokens: 960, requestedMaxTokens: nil, contextLength: 1000) == 40)
        // Nothing left: still 1, so the context check answers.
        #expect(
            throws: GenerationLimits.Violation.contextOverflow(promptTokens: 1000, maxTokens: 1, contextLength: 1000)
        ) { try limits.budget(promptTokens: 1000, requestedMaxTokens: nil, contextLength: 1000) }
        let roomy = GenerationLimits(defaultMaxTokens: 30, maxTokensLimit: 100, maxPromptTokens: 50)
        #expect(try roomy.budget(promptTokens: 10, requestedMaxTokens: nil, contextLength: 1000) == 30)
    }

    @Test func aRequestedBudgetIsCheckedNotClamped() throws {
        #expect(try limits.admit(promptTokens: 10, requestedMaxTokens: 7, contextLength: 1000) == 7)
        #expect(throws: GenerationLimits.Violation.maxTokensBelowOne(0)) {
            try limits.admit(promptTokens: 10, requestedMaxTokens: 0, contextLength: 1000)
        }
        #expect(throws: GenerationLimits.Violation.maxTokensTooLarge(101, limit: 100)) {
            try limits.admit(promptTokens: 10, requestedMaxTokens: 101, contextLength: 1000)
        }
        #expect(throws: GenerationLimits.Violation.promptTooLong(promptTokens: 51, limit: 50)) {
            try limits.admit(promptTokens: 51, requestedMaxTokens: 5, contextLength: 1000)
        }
    }

    /// What could never fit the context is told so first, whatever the server's own limits say.
    @Test func theContextAnswersBeforeTheLimits() throws {
        #expect(
            throws: GenerationLimits.Violation.contextOverflow(promptTokens: 60, maxTokens: 200, contextLength: 100)
        ) { try limits.admit(promptTokens: 60, requestedMaxTokens: 200, contextLength: 100) }
        // `check` alone (a session turn before its transcript is known) leaves those to the context check.
        try limits.check(promptTokens: 120, requestedMaxTokens: 200, contextLength: 100)
        #expect(throws: GenerationLimits.Violation.maxTokensTooLarge(200, limit: 100)) {
            try limits.check(promptTokens: 10, requestedMaxTokens: 200, contextLength: 1000)
        }
    }

    /// A session's defaults at creation: the budget `check` lets through when it is past the
    /// context (so a turn's context check answers) is refused here, since every turn would fail.
    @Test func sessionDefaultsAreCheckedAtCreation() throws {
        typealias V = GenerationLimits.Violation
        try limits.checkDefaults(instructionTokens: 50, maxTokens: 100, contextLength: 1000)
        try limits.checkDefaults(instructionTokens: 0, maxTokens: nil, contextLength: 1000)
        #expect(throws: V.maxTokensTooLarge(99_999_999, limit: 100)) {
            try limits.checkDefaults(instructionTokens: 0, maxTokens: 99_999_999, contextLength: 1000)
        }
        #expect(throws: V.maxTokensBelowOne(0)) {
            try limits.checkDefaults(instructionTokens: 0, maxTokens: 0, contextLength: 1000)
        }
        #expect(throws: V.promptTooLong(promptTokens: 51, limit: 50)) {
            try limits.checkDefaults(instructionTokens: 51, maxTokens: nil, contextLength: 1000)
        }
        // Instructions past the context: the context answers, as for a prompt.
        #expect(throws: V.contextOverflow(promptTokens: 200_000, maxTokens: 1, contextLength: 1000)) {
            try limits.checkDefaults(instructionTokens: 200_000, maxTokens: nil, contextLength: 1000)
        }
        // Instructions and budget within the limits that together pass a small context.
        #expect(throws: V.contextOverflow(promptTokens: 40, maxTokens: 90, contextLength: 100)) {
            try limits.checkDefaults(instructionTokens: 40, maxTokens: 90, contextLength: 100)
        }
    }
}
