import GenerationVocabulary

/// What a generation answers: a conversation, rendered by the backend's chat template, or a raw
/// prompt, run as given (control tokens spelled in it are parsed, as llama.cpp's completion
/// endpoint does), or token ids a client already has.
public enum PromptInput: Sendable, Equatable {
    case conversation(instructions: String?, messages: [ChatMessage])
    case text(String)
    case tokens([Int32])
}
