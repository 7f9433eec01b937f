import Engine
import HTTPServer
import Telemetry

/// A text completion of several choices (a list of prompts, or `n`): every choice's generation
/// runs at once, and the answer holds them in index order, in one body or one stream whose
/// chunks carry their choice's index. A choice that fails or is cancelled ends the whole answer
/// (with its error) and stops the others; usage counts each prompt once and every choice's tokens.
struct OpenAIChoices: Sendable {
    struct Run: Sendable {
        var answer: OpenAIAnswer
        var generation: AdmittedGeneration
        /// The first choice of its prompt: its prompt tokens count in the usage.
        var countsPrompt: Bool
    }

    let runs: [Run]

    func respond(stream: Bool) async throws -> HTTPResponse {
        guard stream else { return try await json() }
        return .eventStream { s in await self.stream(to: s) }
    }

    func json() async throws(OpenAIError) -> HTTPResponse {
        let outcomes = await withTaskGroup(of: (Int, GenerationOutcome).self) { group in
            for (i, run) in runs.enumerated() { group.addTask { (i, await run.generation.run()) } }
            var out = [GenerationOutcome?](repeating: nil, count: runs.count)
            for await (i, outcome) in group {
                out[i] = outcome
                if outcome.status != .completed { group.cancelAll() }
            }
            return out.compactMap { $0 }
        }
        // The error that ended it: a failure before the cancels it caused.
        if let ended = outcomes.first(where: { $0.status == .failed })
            ?? outcomes.first(where: { $0.status != .completed }),
            let error = OpenAIAnswer.error(ending: ended)
        {
            throw error
        }
        var choices: [OpenAICompletionChoice] = []
        for (run, outcome) in zip(runs, outcomes) { choices.append(try run.answer.choice(outcome)) }
        let first = runs[0].answer
        return .json(
            OpenAICompletionBody(
                kind: first.kind, id: first.id, created: first.created, model: first.model, choices: choices,
                usage: OpenAIUsage(usage(outcomes))))
    }

    func stream(to stream: EventStream) async {
        let ended = Locked(false)
        let total = await withTaskGroup(of: (Int, GenerationOutcome?).self) { group in
            for (i, run) in runs.enumerated() {
                group.addTask { (i, await run.answer.streamChoice(run.generation, to: stream, ended: ended)) }
            }
            var outcomes = [GenerationOutcome?](repeating: nil, count: runs.count)
            var failed = false
            for await (i, outcome) in group {
                outcomes[i] = outcome
                if outcome == nil {
                    failed = true
                    group.cancelAll()
                }
            }
            return failed ? nil : usage(outcomes.compactMap { $0 })
        }
        guard let total else { return }
        runs[0].answer.finishStream(usage: total, to: stream)
    }

    /// Choices admitted before a later one was refused: stopped (each run in a cancelled task).
    func cancel() async {
        await withTaskGroup(of: Void.self) { group in
            for run in runs { group.addTask { _ = await run.generation.run() } }
            group.cancelAll()
        }
    }

    /// Each prompt's tokens once, every choice's generated tokens.
    func usage(_ outcomes: [GenerationOutcome]) -> GenerationUsage {
        var total = GenerationUsage(promptTokens: 0, completionTokens: 0, cachedTokens: 0)
        for (run, outcome) in zip(runs, outcomes) {
            if run.countsPrompt {
                total.promptTokens += outcome.usage.promptTokens
                total.cachedTokens += outcome.usage.cachedTokens
            }
            total.completionTokens += outcome.usage.completionTokens
        }
        return total
    }
}
