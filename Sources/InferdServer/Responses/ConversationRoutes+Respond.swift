import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions

extension ConversationRoutes {
    /// A response in a conversation: one user message as a turn of the session (its actor
    /// serializes turns with the session's `on_busy`), the session's instructions and KV cache.
    func respond(
        _ body: ResponsesRequest, conversationID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> HTTPResponse {
        let session = try await require(conversationID, request, param: "conversation")
        guard body.input.count == 1, body.input[0].role == "user" else {
            throw OpenAIError.invalid(
                "with conversation, input must be one user message (it becomes the conversation's next turn)",
                param: "input")
        }
        guard body.instructions == nil else {
            throw OpenAIError.unsupported(
                "with conversation, the conversation's own instructions apply", param: "instructions")
        }
        guard body.truncation == "disabled" else {
            throw OpenAIError.unsupported(
                "with conversation, truncation must be disabled (a conversation keeps its whole transcript)",
                param: "truncation")
        }
        if body.store { try await archive.admitStored(owner: access.owner(of: request)) }
        let object = ResponseObject(
            id: ResponseObject.makeID("resp"), createdAt: Int(Date().timeIntervalSince1970),
            conversation: .init(id: conversationID), status: body.background ? "queued" : "in_progress",
            background: body.background, instructions: nil, maxOutputTokens: body.maxOutputTokens,
            metadata: body.metadata, model: backend.modelName, output: [], previousResponseId: nil, store: body.store,
            temperature: body.temperature, text: body.text, topP: body.topP, truncation: body.truncation)
        let run = ResponseRun(
            ResponseRecord(
                response: object, input: body.input,
                history: [HistoryMessage(role: "user", content: body.input[0].text)],
                owner: access.owner(of: request)))
        // Live before the turn is admitted: a background one counts against its key's quota at once.
        try archive.goLive(run)
        let turn: TurnRequest
        do {
            turn = try await turns.admit(
                to: session, id: request.id, prompt: body.input[0].text, onBusy: nil, onCancel: nil,
                admission: body.admission, arrival: arrival, options: body.options, backend: backend,
                names: .openAI(maxTokens: "max_output_tokens", prompt: "input"))
        } catch {
            archive.live.remove(run.id)
            var e = OpenAIError(error)
            switch error.code {
            case .sessionBusy, .sessionQueueFull, .sessionNotFound: e.param = "conversation"
            default: break
            }
            throw e
        }
        await archive.persist(run.record)
        let finisher = ResponseFinisher(
            archive: archive, run: run, backend: backend, sequence: nil, capacity: 0, requestID: request.id)
        // A background response is stopped only by the cancel route (the server owns its Task).
        let reason: @Sendable () -> CancellationReason
        if body.background {
            reason = { CancellationReason.cancelRequest }
        } else {
            reason = SessionTurns.cancelReason(request.context)
        }
        let generation = turns.generation(turn, of: session, route: "responses", arrival: arrival, reason: reason)
        return try await archive.answer(generation, run: run, background: body.background, stream: body.stream) {
            outcome in
            await finisher.finish(outcome, history: await Self.history(of: session))
        }
    }

    /// The conversation's transcript as the messages a stored response keeps.
    static func history(of session: Session) async -> [HistoryMessage] {
        await session.snapshot(backend: nil).entries.compactMap { e -> HistoryMessage? in
            switch e.kind {
            case .instructions, .deleted: nil
            case .prompt: HistoryMessage(role: "user", content: e.content)
            case .response: HistoryMessage(role: "assistant", content: e.content)
            case .userItem, .assistantItem, .systemItem, .developerItem:
                HistoryMessage(role: e.kind.itemRole ?? "user", content: e.content)
            }
        }
    }
}
