import Engine
import Foundation

/// `inferd generate "prompt"`: loads the model and prints the answer as it grows.
/// Ctrl-C stops generation (cancellation, not an error) and keeps what was printed.
enum GenerateCommand {
    static func run(arguments: [String]) async -> Int32 {
        let engine: InferenceEngine
        let request: GenerationRequest
        let showStats: Bool
        do {
            let options = try CommandOptions(
                arguments,
                known: [
                    "model", "system", "max-tokens", "temperature", "top-k", "top-p", "min-p", "repeat-penalty",
                    "presence-penalty", "frequency-penalty", "seed", "stop", "threads", "chat-template",
                ], booleans: ["stats"])
            guard options.positional.count == 1 else {
                return InferdCLI.fail("generate takes one prompt argument", code: 2)
            }
            showStats = options.flags.contains("stats")
            let path = options.last("model") ?? ServerConfiguration().model
            let threads = try options.int("threads") ?? ProcessInfo.processInfo.activeProcessorCount
            let requestedMaxTokens = try options.int("max-tokens")
            var sampling = SamplingOptions()
            if let v = try options.float("temperature") { sampling.temperature = v }
            if let v = try options.int("top-k") { sampling.topK = v }
            if let v = try options.float("top-p") { sampling.topP = v }
            if let v = try options.float("min-p") { sampling.minP = v }
            if let v = try options.float("repeat-penalty") { sampling.repeatPenalty = v }
            if let v = try options.float("presence-penalty") { sampling.presencePenalty = v }
            if let v = try options.float("frequency-penalty") { sampling.frequencyPenalty = v }
            if let v = try options.int("seed") { sampling.seed = UInt64(truncatingIfNeeded: v) }
            try sampling.validate()
            // Options are checked before the model loads, so a typo fails at once.
            var templateSetting = ServerConfiguration()
            templateSetting.chatTemplate = options.last("chat-template") ?? ""
            let chatTemplate = try templateSetting.chatTemplateOverride()
            engine = try InferenceEngine(path: path, threads: max(1, threads), chatTemplate: chatTemplate)
            var messages: [ChatMessage] = []
            if let system = options.last("system") { messages.append(ChatMessage(role: .system, content: system)) }
            messages.append(ChatMessage(role: .user, content: options.positional[0]))
            let prompt = try engine.promptTokens(for: messages)
            let maxTokens = requestedMaxTokens ?? min(512, engine.contextLength - prompt.count)
            request = GenerationRequest(
                promptTokens: prompt, maxTokens: maxTokens, sampling: sampling, stop: options.values["stop"] ?? [])
        } catch let error as ConfigurationError {
            return InferdCLI.fail(error.description, code: 2)
        } catch let error as GenerationError {
            return InferdCLI.fail(error.description, code: 2)
        } catch {
            return InferdCLI.fail("\(error)")
        }

        let printer = SnapshotPrinter()
        let generation = Task { () throws(GenerationError) -> GenerationResult in
            try await engine.generate(request) { event in
                if case .snapshot(let content, _) = event { printer.show(content) }
            }
        }
        // Ctrl-C is a stop request: cancel the generation Task, keep what was printed.
        ShutdownTrigger(onFire: { _ in generation.cancel() }).installSignalHandlers()
        let result: GenerationResult
        do {
            result = try await generation.value
        } catch {
            return InferdCLI.fail("\(error)")
        }
        printer.show(result.content)
        print()
        if showStats || result.finishReason == .cancelled {
            let t = result.timings
            FileHandle.standardError.write(
                Data(
                    String(
                        format:
                            "[finish_reason=%@ prompt_tokens=%d completion_tokens=%d prompt=%.1f tok/s generation=%.1f tok/s]\n",
                        result.finishReason.rawValue, result.usage.promptTokens, result.usage.completionTokens,
                        t.promptTokensPerSecond, t.generationTokensPerSecond
                    ).utf8))
        }
        engine.shutdown()
        return result.finishReason == .cancelled ? 130 : 0
    }
}

/// Prints each snapshot's new part: snapshots are whole answers, so the terminal shows the
/// suffix beyond what it already printed.
final class SnapshotPrinter: @unchecked Sendable {
    private var printed = 0
    private let lock = NSLock()

    func show(_ content: String) {
        lock.lock()
        defer { lock.unlock() }
        let utf8 = Array(content.utf8)
        guard utf8.count > printed else { return }
        FileHandle.standardOutput.write(Data(utf8[printed...]))
        printed = utf8.count
    }
}
