/// Why a model's chat template cannot be used; raised when the model is loaded.
public enum ChatTemplateError: Error, Equatable, CustomStringConvertible {
    /// The model carries no `tokenizer.chat_template`.
    case missingTemplate
    /// The template is not of a family the engine can render without a Jinja interpreter.
    case unsupportedTemplate(reason: String)
    /// The template needs a special token the vocabulary does not have.
    case missingToken(String)

    public var description: String {
        switch self {
        case .missingTemplate:
            return "the model has no chat template (tokenizer.chat_template); chat requests cannot be rendered"
        case .unsupportedTemplate(let reason):
            return "unsupported chat template: \(reason); only ChatML templates are rendered"
        case .missingToken(let token):
            return "the chat template uses \(token), which is not a token of the model's vocabulary"
        }
    }
}
