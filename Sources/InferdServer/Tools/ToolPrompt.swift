import Backend
import Engine
import ToolCalling

/// How a conversation with tools reaches the model. A template that renders tools itself (its
/// source reads `tools` and `tool_call`) gets them as its `tools` variable and the history as
/// it is; for one that does not (SmolLM2's, Gemma 3's), the tools are described by the format's
/// instruction at the end of the system message, an assistant's earlier calls are written in
/// the format's own markup and tool results become user messages (consecutive ones merged, so
/// templates that insist on alternating roles still render).
struct ToolPrompt: Sendable {
    let format: any ToolCallFormat
    let rendersTools: Bool

    func input(
        instructions: String?, messages: [ChatMessage], tools: ToolUse?, templateArguments: String?
    ) -> PromptInput {
        if rendersTools {
            return .conversation(
                instructions: instructions, messages: messages,
                extras: TemplateExtras(
                    tools: tools?.tools ?? [], arguments: templateArguments, choice: tools?.choice ?? .auto,
                    parallel: tools?.parallel ?? true))
        }
        var history: [ChatMessage] = []
        for message in messages {
            switch message.role {
            case .assistant where !(message.toolCalls ?? []).isEmpty:
                let markup = format.markup(for: message.toolCalls ?? [])
                let text = message.content.isEmpty ? markup : message.content + "\n" + markup
                history.append(ChatMessage(role: .assistant, content: text))
            case .tool:
                let name = messages.lazy.compactMap { $0.toolCalls }.joined().first { $0.id == message.toolCallID }?
                    .name
                let text = "Result of \(name ?? "the tool") (\(message.toolCallID ?? "")): \(message.content)"
                if let last = history.last, last.role == .user, last.content.hasPrefix("Result of ") {
                    history[history.count - 1].content += "\n" + text
                } else {
                    history.append(ChatMessage(role: .user, content: text))
                }
            default:
                history.append(ChatMessage(role: message.role, content: message.content))
            }
        }
        var system = instructions
        if let tools, let instruction = format.instruction(for: tools) {
            if let i = history.firstIndex(where: { $0.role == .system }) {
                history[i].content += "\n\n" + instruction
            } else {
                system = (system.map { $0 + "\n\n" } ?? "") + instruction
            }
        }
        return .conversation(
            instructions: system, messages: history, extras: TemplateExtras(arguments: templateArguments))
    }
}
