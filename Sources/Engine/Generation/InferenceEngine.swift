import Foundation
import Telemetry
import Timekeeping

/// A loaded model ready to answer: the GGUF file, its tokenizer and chat template, the
/// forward pass, and the runner that owns the compute thread. One per served model.
public final class InferenceEngine: Sendable {
    public let path: String
    /// `general.name` from the file, else the file name.
    public let modelName: String
    public let fileSize: Int
    public let parameterCount: Int
    public let tokenizer: Tokenizer
    /// The chat template (override, else the model's own); nil when there is neither, and then
    /// only raw-prompt routes work (`promptTokens(for:)` throws `ChatTemplateError.missingTemplate`).
    public let template: ChatTemplate?
    public let model: LlamaModel
    public let runner: GenerationRunner
    /// The vocabulary's token trie for constraints, built on first use (see `InferenceEngine+Constraint`).
    let constraintTrie = Locked<TokenTrie?>(nil)
    /// Constraints by identity, so a schema used again shares its warm automaton.
    let constraintCache = Locked<[String: GrammarConstraint]>([:])

    public var contextLength: Int { model.config.contextLength }
    public static let defaultPrefixCacheMiB = 16
    public static let defaultSpeculativeLookup = 0
    public static let defaultDraftTokens = 4
    /// `general.architecture` (one of `Architecture.supported`).
    public var architecture: String { model.config.architecture.name }
    /// The storage types of the file's tensors, sorted by name ("F32", "Q4_K", …).
    public let weightTypes: [String]

    /// `admission` bounds how many generations run and wait; `metrics` receives its series;
    /// `contextLimit` caps the context (the `context_length` setting; nil: the model's own).
    /// `chatTemplate` overrides the model's chat template: a built-in name (`chatml`, `llama3`,
    /// `gemma`, `qwen`, `phi3`) or Jinja text. `kvCacheType` is how KV caches store keys and values.
    /// `prefixCacheMiB` is the memory kept for finished requests' KV caches, from which new
    /// prompts that share their prefixes start (`PrefixCache`; 0 turns it off).
    /// `speculativeLookup` is how many tokens prompt lookup drafts per decode step for
    /// speculative decoding (`Speculation`, `PromptLookupDrafter`; 0 turns it off);
    /// `draftModelPath` drafts with a smaller model of the same vocabulary instead
    /// (`ModelDrafter`, `draftTokens` per step). `clock` decides
    /// the admission queue's deadlines, preemptions and starvation times.
    public init(
        path: String, threads: Int, admission: AdmissionPolicy = AdmissionPolicy(), metrics: Metrics = Metrics(),
        contextLimit: Int? = nil, chatTemplate: String? = nil, kvCacheType: KVCacheType = .f16,
        prefixCacheMiB: Int = InferenceEngine.defaultPrefixCacheMiB,
        speculativeLookup: Int = InferenceEngine.defaultSpeculativeLookup, draftModelPath: String? = nil,
        draftTokens: Int = InferenceEngine.defaultDraftTokens, clock: any TimeSource = .system
    ) throws {
        let file = try GGUFFile(path: path)
        let architecture = try file.architecture
        guard Architecture.named(architecture) != nil else { throw ModelError.unsupportedArchitecture(architecture) }
        self.path = path
        self.fileSize = file.fileSize
        self.modelName =
            file.optionalString("general.name") ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        self.parameterCount = file.tensors.values.reduce(0) { $0 + $1.elementCount }
        self.weightTypes = Set(file.tensors.values.map { $0.type.description }).sorted()
        let tokenizer = try Tokenizer(gguf: file)
        self.tokenizer = tokenizer
        let template = try ChatTemplate.resolve(
            override: chatTemplate, modelTemplate: file.optionalString("tokenizer.chat_template"), tokenizer: tokenizer)
        self.template = template
        let model = try LlamaModel(
            gguf: file, threads: threads, contextLimit: contextLimit, kvCacheType: kvCacheType)
        guard model.config.vocabularySize >= tokenizer.vocabularySize else {
            throw ModelError.invalidHyperParameter(
                "the output head has \(model.config.vocabularySize) rows but the tokenizer has \(tokenizer.vocabularySize) tokens"
            )
        }
        self.model = model
        var speculation =
            speculativeLookup > 0
            ? Speculation(drafter: PromptLookupDrafter(), maxDraft: speculativeLookup, metrics: metrics) : nil
        if let draftModelPath {
            let draft = try Self.loadDraftModel(
                path: draftModelPath, for: model, tokenizer: tokenizer, contextLimit: contextLimit)
            speculation = Speculation(
                makeDrafter: { ModelDrafter(model: draft, capacity: $0) }, maxDraft: draftTokens, metrics: metrics)
        }
        let runner = GenerationRunner(
            predictor: model,
            endOfGeneration: tokenizer.endOfGenerationIDs.union(template?.endOfGenerationIDs ?? []),
            makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) }, admission: admission, metrics: metrics,
            prefixCacheBytes: prefixCacheMiB << 20, speculation: speculation, clock: clock)
        self.runner = runner
    }

    /// Generations the engine holds now, running or waiting for a place, including ones
    /// stopping after a cancel.
    public var activeGenerations: Int { runner.activeGenerations }

    /// The prompt for a conversation, rendered by the chat template. Special tokens come only
    /// from the template; message text is always plain text. Throws `ChatTemplateError` when
    /// there is no template or it cannot render the conversation. A model that asks for BOS gets
    /// exactly one: the template's own (`{{ bos_token }}`), else one put in front.
    public func promptTokens(
        for messages: [ChatMessage], tools: [ToolDefinition] = [], arguments: String? = nil
    ) throws(ChatTemplateError) -> [Int32] {
        try renderedPrompt(for: messages, tools: tools, arguments: arguments).tokens
    }

    /// The prompt's tokens (as `promptTokens`) and its rendered text (control tokens spelled out),
    /// for what the text says about the answer to come, such as a generation prompt that opens
    /// `<think>`.
    public func renderedPrompt(
        for messages: [ChatMessage], tools: [ToolDefinition] = [], arguments: String? = nil
    ) throws(ChatTemplateError) -> (tokens: [Int32], text: String) {
        guard let template else { throw .missingTemplate }
        let pieces = try template.render(messages, tools: tools, arguments: arguments, addGenerationPrompt: true)
        var text = ""
        for piece in pieces {
            switch piece {
            case .text(let t), .template(let t): text += t
            case .special: break
            }
        }
        return (withBOS(tokenizer.encode(pieces)), text)
    }

    /// A raw prompt (no chat template) as the model expects it: the BOS token first when the
    /// model asks for one (`tokenizer.ggml.add_bos_token`, as llama.cpp adds it), then the text
    /// with the spellings of control tokens parsed, as llama.cpp's completion endpoint does.
    public func rawPromptTokens(_ text: String) -> [Int32] {
        withBOS(tokenizer.encode(text, parseSpecial: true))
    }

    private func withBOS(_ ids: [Int32]) -> [Int32] {
        guard tokenizer.addsBOS, let bos = tokenizer.bosID, ids.first != bos else { return ids }
        return [bos] + ids
    }

    /// Generates an answer; see `GenerationRunner.generate`.
    public func generate(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) async throws(GenerationError) -> GenerationResult {
        try await runner.generate(request, onEvent: onEvent)
    }

    /// Starts a generation and returns at once; see `GenerationRunner.submit`.
    public func submit(
        _ request: GenerationRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void = { _ in }
    ) throws(GenerationError) -> GenerationTicket {
        try runner.submit(request, onEvent: onEvent)
    }

    public func shutdown() {
        runner.shutdown()
    }
}

extension StreamingDetokenizer: IncrementalTextDecoder {}
