/// Renders conversations into prompts the way the model's `tokenizer.chat_template` does, for
/// the template families the engine recognises (no Jinja interpreter is involved).
///
/// Supported: ChatML, `<|im_start|>{role}\n{content}<|im_end|>\n` per message and
/// `<|im_start|>assistant\n` as the generation prompt. When the template inserts a default
/// system message before a conversation that does not start with one, that message is read
/// from the template's own text.
///
/// Special tokens come only from the template: message content is always `.text`, so content
/// that spells `<|im_start|>` is tokenized as ordinary text.
public struct ChatTemplate: Sendable {
    public enum Family: String, Sendable, Equatable {
        case chatML
    }

    public let family: Family
    /// The system message inserted when the first message is not a system message, if the
    /// template has one.
    public let defaultSystemMessage: String?
    /// Whether the template trims whitespace around message content (`content | trim`).
    public let trimsContent: Bool
    private let startID: Int32
    private let endID: Int32
    private static let startText = "<|im_start|>"
    private static let endText = "<|im_end|>"

    /// Recognises the template's family. Throws `ChatTemplateError` when there is no template,
    /// when it is not a family the engine can render, or when its special tokens are missing.
    public init(template: String?, tokenizer: Tokenizer) throws {
        guard let template, !template.allSatisfy(\.isWhitespace) else {
            throw ChatTemplateError.missingTemplate
        }
        let text = JinjaTemplateText(template)
        let code = text.compactCode
        let mentionsRole = ["message['role']", "message[\"role\"]", "message.role"].contains { code.contains($0) }
        let mentionsContent = ["message['content']", "message[\"content\"]", "message.content"].contains {
            code.contains($0)
        }
        guard template.contains(Self.startText), template.contains(Self.endText), mentionsRole, mentionsContent
        else {
            throw ChatTemplateError.unsupportedTemplate(
                reason: "not ChatML (no <|im_start|>/<|im_end|> around message role and content): "
                    + Self.excerpt(template))
        }
        guard text.literals.contains(where: { $0.contains(Self.startText + "assistant") }) else {
            throw ChatTemplateError.unsupportedTemplate(
                reason: "ChatML template without an '<|im_start|>assistant' generation prompt: "
                    + Self.excerpt(template))
        }
        guard let startID = tokenizer.tokenID(spelledAs: Self.startText) else {
            throw ChatTemplateError.missingToken(Self.startText)
        }
        guard let endID = tokenizer.tokenID(spelledAs: Self.endText) else {
            throw ChatTemplateError.missingToken(Self.endText)
        }
        self.family = .chatML
        self.startID = startID
        self.endID = endID
        self.trimsContent = ["content']|trim", "content\"]|trim", "content|trim"].contains { code.contains($0) }
        self.defaultSystemMessage = try Self.defaultSystem(in: text, template: template)
    }

    /// The prompt for `messages`: special tokens as `.special`, everything else as `.text`.
    /// With `addGenerationPrompt`, it ends with the opening of an assistant turn. The default
    /// system message goes before a non-empty conversation whose first message is not a system
    /// message (as SmolLM2's template does it, inside its message loop).
    public func render(_ messages: [ChatMessage], addGenerationPrompt: Bool = true) -> [PromptPiece] {
        var pieces: [PromptPiece] = []
        if let defaultSystemMessage, let first = messages.first, first.role != .system {
            appendTurn(role: ChatMessage.Role.system.rawValue, content: defaultSystemMessage, to: &pieces)
        }
        for message in messages {
            let content = trimsContent ? Self.trimmed(message.content) : message.content
            appendTurn(role: message.role.rawValue, content: content, to: &pieces)
        }
        if addGenerationPrompt {
            pieces.append(.special(startID))
            pieces.append(.text("assistant\n"))
        }
        return pieces
    }

    /// The rendered prompt as text, special tokens spelled out; for display and debugging.
    public func renderText(_ messages: [ChatMessage], addGenerationPrompt: Bool = true) -> String {
        var text = ""
        for piece in render(messages, addGenerationPrompt: addGenerationPrompt) {
            switch piece {
            case .text(let value), .template(let value): text += value
            case .special(let id): text += id == startID ? Self.startText : Self.endText
            }
        }
        return text
    }

    private func appendTurn(role: String, content: String, to pieces: inout [PromptPiece]) {
        pieces.append(.special(startID))
        pieces.append(.text(role + "\n" + content))
        pieces.append(.special(endID))
        pieces.append(.text("\n"))
    }

    /// Finds `<|im_start|>system\n…<|im_end|>` written out in the template (as one literal),
    /// inserted under a condition on whether the first message is a system message.
    private static func defaultSystem(in text: JinjaTemplateText, template: String) throws -> String? {
        let header = startText + "system\n"
        let candidates = text.literals.filter { $0.contains(header) }
        guard !candidates.isEmpty else { return nil }
        let checksFirstRole = ["!='system'", "=='system'"].contains { text.compactCode.contains($0) }
        for literal in candidates {
            guard let headerRange = literal.range(of: header),
                let endRange = literal.range(of: endText, range: headerRange.upperBound..<literal.endIndex)
            else { continue }
            guard checksFirstRole else {
                throw ChatTemplateError.unsupportedTemplate(
                    reason: "a fixed system message without a condition on the first message's role")
            }
            return String(literal[headerRange.upperBound..<endRange.lowerBound])
        }
        throw ChatTemplateError.unsupportedTemplate(
            reason: "a default system message that is not written out as one string: " + excerpt(template))
    }

    private static func trimmed(_ text: String) -> String {
        var scalars = Substring(text).unicodeScalars
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }

    private static func excerpt(_ template: String) -> String {
        let limit = 80
        let flat = template.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\\n")
        return flat.count <= limit ? "'\(flat)'" : "'\(flat.prefix(limit))…'"
    }
}
