import Backend
import Engine
import Sessions
import ToolCalling

/// A session turn's tools as the session asks for them (`TurnAnswerReader`): the transcript
/// prompted as `ToolPrompt` does for chat, and the answer split by the turn's tracker, the same
/// one its snapshots and final body read, so a call has one id everywhere (stream, answer,
/// transcript).
struct SessionToolReader: TurnAnswerReader {
    let prompt: ToolPrompt
    let tools: ToolUse?
    let tracker: ToolAnswerTracker

    func input(_ messages: [ChatMessage]) -> PromptInput {
        prompt.input(instructions: nil, messages: messages, tools: tools, templateArguments: nil)
    }

    func message(_ text: String, final: Bool) -> ChatMessage {
        let m = tracker.message(
            text, finishReason: final ? FinishReason.stop.rawValue : FinishReason.length.rawValue, final: final)
        return ChatMessage(
            role: .assistant, content: m.content, toolCalls: m.calls.isEmpty ? nil : m.calls, reasoning: m.reasoning)
    }
}
