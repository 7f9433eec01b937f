import Engine
import GenerationVocabulary

/// What answers a generation, seen from above the engine: a conversation (instructions and
/// messages) or a raw prompt goes in, with options and limits, and events and a result come
/// out. The routes, the generation service and sessions talk to this and nothing below it, so
/// another backend (a remote engine, a scripted one in tests) replaces the local engine without
/// touching them. `InferenceEngine` + its chat template is the local one; `SingleFlightBackend`
/// wraps any of them to share identical generations in flight.
public protocol GenerationBackend: Sendable {
    /// The served model's name, and every other name a client may use for it.
    var modelName: String { get }
    var modelAliases: Set<String> { get }
    var architecture: String { get }
    var weightTypes: [String] { get }
    /// What the model's weights take in this process's memory; nil (the default) when the model
    /// is not in this process.
    var weightResidency: WeightResidency? { get }
    /// Tokens a prompt and its answer may use together.
    var contextLength: Int { get }
    /// Token ids a client may send as a prompt are `0..<vocabularySize`.
    var vocabularySize: Int { get }
    /// Generations running or waiting (each counted once).
    var activeGenerations: Int { get }

    /// The prompt the backend will run for `input`, with its length in tokens. Throws when a
    /// conversation cannot be rendered (no chat template, or the template refuses it).
    func prepare(_ input: PromptInput) throws(ChatTemplateError) -> PreparedPrompt

    /// Throws `serverBusy` when no further generation would be admitted now.
    func checkCapacity() throws(GenerationError)

    /// Hands a generation over and returns at once (a full queue throws `serverBusy`); its
    /// `result()` is the one way to consume it. The awaiting Task's cancellation stops it.
    func submit(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) throws(GenerationError) -> PendingGeneration

    /// Kept KV caches, when the backend can keep one between a session's turns; nil when it
    /// cannot, and each turn then runs the whole transcript again.
    var kvCache: (any KVCacheCapability)? { get }

    /// Structured output: a constraint making answers match `grammar` over this backend's
    /// vocabulary; nil when the backend cannot constrain its output (the default).
    /// `identity` names what the grammar allows (for single-flight).
    func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)?

    /// A thinking budget: a constraint that forces `</think>` once the answer has written
    /// `budget` tokens of reasoning, wrapping `inner` (the request's other constraint); the
    /// answer starts inside the reasoning when `startsInReasoning` (the prompt opened `<think>`).
    /// Nil when the backend cannot force tokens (the default): a budget is then refused.
    func reasoningBudget(_ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?)
        -> (any GenerationConstraint)?

    /// The chat template's Jinja source, when this backend renders conversations itself (tool
    /// calling reads the model's call format from it); nil otherwise (the default).
    var chatTemplateSource: String? { get }

    /// Whether the chat template renders tools and tool turns itself (its `tools` variable).
    var rendersTools: Bool { get }

    /// Whether the backend sends tools, `tool_choice` and tool turns on to a server that calls
    /// them itself (a remote engine), answering calls as text in the `generic` format's markup;
    /// false (the default): tools need `chatTemplateSource` and a grammar here.
    var forwardsTools: Bool { get }

    /// Whether the backend computes log-probabilities (`BackendRequest.logprobs`); false (the
    /// default): a request asking for them is refused, never answered without them.
    var computesLogprobs: Bool { get }

    /// The tokenizer clients may use; nil (the default) when it is not in this process.
    var tokenizerAccess: (any TokenizerAccess)? { get }

    /// Stops accepting work and ends what runs.
    func shutdown()
}

extension GenerationBackend {
    public func makeConstraint(grammar: CompiledGrammar, identity: String) -> (any GenerationConstraint)? { nil }
    public func reasoningBudget(_ budget: Int, startsInReasoning: Bool, inner: (any GenerationConstraint)?)
        -> (any GenerationConstraint)?
    { nil }
    public var chatTemplateSource: String? { nil }
    public var rendersTools: Bool { false }
    public var forwardsTools: Bool { false }
    public var computesLogprobs: Bool { false }
    public var tokenizerAccess: (any TokenizerAccess)? { nil }
    public var weightResidency: WeightResidency? { nil }

    /// Submits a generation and awaits it: returns only once the backend has stopped working on
    /// it. The awaiting Task's cancellation stops it.
    public func generate(
        _ request: BackendRequest, onEvent: @escaping @Sendable (GenerationEvent) -> Void
    ) async throws(GenerationError) -> GenerationResult {
        try await submit(request, onEvent: onEvent).result()
    }
}
