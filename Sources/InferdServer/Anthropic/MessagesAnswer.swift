import Engine
import Foundation
import HTTPServer
import StructuredOutput
import Telemetry

/// How a Messages request is answered once admitted, stateless or a session's turn alike: one
/// `message` body, or Anthropic's stream (`message_start`, blocks, `message_delta`,
/// `message_stop`, with `ping` while the request waits), both read from the same snapshots.
struct MessagesAnswer: Sendable {
    let id: String
    let model: String
    /// The answer read by the model's call format (tools, or a thinking template); nil: plain text.
    let tools: ToolAnswerTracker?
    /// Input tokens as known before the generation starts (the prepared prompt), for `message_start`.
    let promptTokens: Int

    /// Runs the generation and answers once; a cancelled or failed one is an error.
    func json(_ generation: AdmittedGeneration) async throws(AnthropicError) -> HTTPResponse {
        let outcome = await generation.run()
        if let error = Self.error(ending: outcome) { throw error }
        return .json(body(outcome))
    }

    /// The final message of a completed generation.
    func body(_ outcome: GenerationOutcome) -> MessageBody {
        var blocks: [MessageBlock] = []
        var calls = false
        if let tools {
            let message = tools.message(outcome.content, finishReason: outcome.wireFinishReason)
            if let reasoning = message.reasoning, !reasoning.isEmpty { blocks.append(.thinking(reasoning)) }
            if !message.content.isEmpty { blocks.append(.text(message.content)) }
            for call in message.calls {
                let input = (try? JSONParser.parse(call.arguments)) ?? .object([])
                blocks.append(.toolUse(id: MessageBlock.toolUseID(call.id), name: call.name, input: input))
            }
            calls = !message.calls.isEmpty
        } else if !outcome.content.isEmpty {
            blocks.append(.text(outcome.content))
        }
        let (reason, sequence) = Self.stopReason(outcome, calls: calls)
        return MessageBody(
            id: id, model: model, content: blocks, stopReason: reason, stopSequence: sequence,
            usage: MessagesUsage(outcome.usage))
    }

    /// Anthropic's `stop_reason` (and `stop_sequence`) for a completed answer.
    static func stopReason(_ outcome: GenerationOutcome, calls: Bool) -> (String, String?) {
        if outcome.finishReason == .length { return ("max_tokens", nil) }
        if calls { return ("tool_use", nil) }
        if let sequence = outcome.stopSequence { return ("stop_sequence", sequence) }
        return ("end_turn", nil)
    }

    /// The stream. Deltas are derived from snapshots (`MessagesStreamBuilder`); every event is
    /// sent in order and never dropped. A failure or a cancel by someone else (a session's
    /// `replace`, a cancel request) ends the stream with an `error` event; after a disconnect
    /// nothing more is written, and the generation has stopped within a step.
    func stream(_ generation: AdmittedGeneration, to stream: EventStream) async {
        let send: @Sendable (MessagesStreamEvent) -> Void = { stream.send(event: $0.name, data: $0.data) }
        send(
            .messageStart(
                MessageBody(
                    id: id, model: model, content: [], stopReason: nil, stopSequence: nil,
                    usage: MessagesUsage(inputTokens: promptTokens))))
        let builder = Locked(MessagesStreamBuilder())
        let text = OpenAIDeltaTracker()
        let outcome = await generation.run { event in
            switch event {
            case .queued: send(.ping)
            case .started: break
            case .snapshot(let content, _):
                let events = builder.withLock { b in
                    if let tools { return b.events(for: tools.update(content, final: false)) }
                    return text.delta(for: content).map { b.events(forText: $0) } ?? []
                }
                events.forEach(send)
            }
        }
        if let error = Self.error(ending: outcome) {
            send(.error(error))
            return
        }
        // What the snapshots held back (a possible stop sequence or call markup), then the end.
        var calls = false
        let rest = builder.withLock { b -> [MessagesStreamEvent] in
            var out: [MessagesStreamEvent] = []
            if let tools {
                out += b.events(
                    for: tools.update(
                        outcome.content, final: ToolAnswerTracker.isFinal(outcome.wireFinishReason)))
                calls = !tools.message(outcome.content, finishReason: outcome.wireFinishReason).calls.isEmpty
            } else if let piece = text.delta(for: outcome.content) {
                out += b.events(forText: piece)
            }
            return out + b.close()
        }
        rest.forEach(send)
        let (reason, sequence) = Self.stopReason(outcome, calls: calls)
        send(.messageDelta(stopReason: reason, stopSequence: sequence, usage: MessagesUsage(outcome.usage)))
        send(.messageStop)
    }

    /// The error a generation that did not complete answers with (the chat route's, in
    /// Anthropic's shape); nil when it completed.
    static func error(ending outcome: GenerationOutcome) -> AnthropicError? {
        OpenAIAnswer.error(ending: outcome).map(AnthropicError.init)
    }
}
