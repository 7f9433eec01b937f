/// Why a conversation cannot be rendered with a chat template.
public enum ChatTemplateError: Error, Equatable, CustomStringConvertible {
    /// The model carries no `tokenizer.chat_template` and no `chat_template` override is set.
    case missingTemplate
    /// `--chat-template` names no built-in and is not Jinja text.
    case unknownBuiltIn(String, known: [String])
    /// The template does not parse.
    case invalidTemplate(origin: String, JinjaError)
    /// The start-up test conversation (system, user, assistant, user) failed to render.
    case testRenderFailed(origin: String, JinjaError)
    /// Rendering this conversation failed (the template raised, or passed a bound).
    case renderFailed(origin: String, JinjaError)

    public var description: String {
        switch self {
        case .missingTemplate:
            return "the model has no chat template (tokenizer.chat_template) and none is configured; "
                + "set chat_template (--chat-template NAME|@FILE) or use a raw-prompt route"
        case .unknownBuiltIn(let name, let known):
            return "chat_template '\(name)' is not a built-in template (\(known.joined(separator: ", "))), "
                + "a Jinja template text or @FILE"
        case .invalidTemplate(let origin, let error):
            return "the chat template (\(origin)) cannot be used: \(error)"
        case .testRenderFailed(let origin, let error):
            return
                "the chat template (\(origin)) fails on a test conversation (system, user, assistant, user): \(error)"
        case .renderFailed(let origin, let error):
            return "the chat template (\(origin)) cannot render this conversation: \(error)"
        }
    }
}
