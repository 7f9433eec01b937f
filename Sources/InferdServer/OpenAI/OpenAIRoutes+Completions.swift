import Backend
import Engine
import Foundation
import HTTPServer

extension OpenAIRoutes {
    /// `POST /v1/completions`: each prompt is raw text (control-token spellings are parsed, so a
    /// caller can write its own template) or token ids; no chat template is applied. Every
    /// prompt gets `n` choices, each its own generation (the engine batches them), indexed
    /// prompt × n + choice; with `echo` a choice's text and log-probabilities start with its
    /// prompt's, scored in the prompt's own pass.
    func completions(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrival = generations.now
        let backend = try host.requireBackend()
        let completion = try OpenAICompletionRequest(try Self.fields(request))
        try Self.checkModel(completion.parameters.model, backend)
        if completion.echo && !backend.computesLogprobs {
            throw OpenAIError.unsupported("echo: this server's backend does not score prompts", param: "echo")
        }
        // Every prompt is read and checked before anything is admitted.
        let many = completion.prompts.count > 1
        var prompts: [(prompt: PreparedPrompt, echo: String?)] = []
        for (i, given) in completion.prompts.enumerated() {
            let param = many ? "prompt[\(i)]" : "prompt"
            let prompt: PreparedPrompt
            let echo: String
            switch given {
            case .text(let text):
                prompt = try generations.prepare(backend, .text(text))
                echo = text
            case .tokens(let ids):
                let vocabulary = backend.vocabularySize
                if let bad = ids.first(where: { Int($0) >= vocabulary }) {
                    throw OpenAIError.invalid(
                        "\(param) token id \(bad) is outside the vocabulary of \(vocabulary) tokens", param: param)
                }
                prompt = try generations.prepare(backend, .tokens(ids))
                echo = backend.tokenizerAccess?.detokenize(ids) ?? ""
            }
            guard prompt.tokenCount > 0 else { throw OpenAIError.invalid("\(param) must not be empty", param: param) }
            prompts.append((prompt, completion.echo ? echo : nil))
        }
        let id = "cmpl-\(request.id)"
        let created = Int(Date().timeIntervalSince1970)
        var runs: [OpenAIChoices.Run] = []
        do {
            for (i, p) in prompts.enumerated() {
                for j in 0..<completion.n {
                    var parameters = completion.parameters
                    // Choices of one prompt are drawn independently: with a seed, each its own.
                    if let seed = parameters.options.seed { parameters.options.seed = seed &+ UInt64(j) }
                    let logprobs = try Self.recorder(parameters, backend: backend, scoresPrompt: p.echo != nil)
                    let generation = try admit(
                        prompt: p.prompt, parameters, route: "completions",
                        promptParam: many ? "prompt[\(i)]" : "prompt",
                        backend: backend, request: request, arrival: arrival, logprobs: logprobs)
                    var answer = OpenAIAnswer(
                        kind: .text, id: id, model: backend.modelName, includeUsage: parameters.includeUsage,
                        logprobs: logprobs, created: created)
                    answer.index = i * completion.n + j
                    answer.echoText = p.echo
                    runs.append(OpenAIChoices.Run(answer: answer, generation: generation, countsPrompt: j == 0))
                }
            }
        } catch {
            // A later choice refused (a full queue): the admitted ones are stopped, not left running.
            await OpenAIChoices(runs: runs).cancel()
            throw error
        }
        if runs.count == 1 {
            return try await respond(runs[0].generation, runs[0].answer, stream: completion.parameters.stream)
        }
        return try await OpenAIChoices(runs: runs).respond(stream: completion.parameters.stream)
    }
}
