import Backend
import Cancellation
import Engine
import Foundation
import HTTPServer
import Sessions

extension ConversationRoutes {
    /// A response in a conversation: a turn of the session (its actor serializes turns with the
    /// session's `on_busy`), the session's instructions and KV cache. The turn's input is one
    /// user message, or the outputs of the conversation's function calls, optionally followed by
    /// one user message; with `tools`, the answer's calls become `function_call` items, kept in
    /// the transcript as the response's calls.
    func respond(
        _ body: ResponsesRequest, conversationID: String, backend: any GenerationBackend, request: HTTPRequest,
        arrival: ContinuousClock.Instant
    ) async throws -> HTTPResponse {
        let session = try await require(conversationID, request, param: "conversation")
        let (prompt, results) = try Self.turnInput(body.input)
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
        let toolTurn: SessionToolTurn
        do {
            toolTurn = try await turns.toolTurn(
                NativeToolFields(use: body.tools, results: results.map(\.message)), prompt: prompt, session: session,
                backend: backend, hasFormat: body.options.format != nil, names: .responses)
        } catch {
            throw Self.inputError(error, results: results)
        }
        var object = ResponseObject(
            id: ResponseObject.makeID("resp"), createdAt: Int(Date().timeIntervalSince1970),
            conversation: .init(id: conversationID), status: body.background ? "queued" : "in_progress",
            background: body.background, instructions: nil, maxOutputTokens: body.maxOutputTokens,
            metadata: body.metadata, model: backend.modelName, output: [], previousResponseId: nil, store: body.store,
            temperature: body.temperature, text: body.text, topP: body.topP, truncation: body.truncation)
        object.parallelToolCalls = body.parallelToolCalls
        object.toolChoice = body.toolChoiceEcho
        object.tools = body.toolsEcho
        // The turn's calls keep one id in the stream, the response and the transcript.
        let run = ResponseRun(
            ResponseRecord(
                response: object, input: body.input, history: HistoryMessage.of(body.input),
                owner: access.owner(of: request)), tools: toolTurn.tracker)
        // Live before the turn is admitted: a background one counts against its key's quota at once.
        try archive.goLive(run)
        let turn: TurnRequest
        do {
            turn = try await turns.admit(
                to: session, id: request.id, prompt: prompt, onBusy: nil, onCancel: nil,
                admission: body.admission, arrival: arrival, options: body.options, backend: backend,
                names: .openAI(maxTokens: "max_output_tokens", prompt: "input"), tools: toolTurn)
        } catch {
            archive.live.remove(run.id)
            var e = Self.inputError(error, results: results)
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

    /// A conversation turn's input: function_call_output items (the results, with their index in
    /// `input`), then at most one user message, which ends the input (400 naming the item
    /// otherwise). A turn gives a message, results or both.
    static func turnInput(_ input: [ResponseItem]) throws(OpenAIError) -> (
        prompt: String, results: [(index: Int, message: ChatMessage)]
    ) {
        var results: [(index: Int, message: ChatMessage)] = []
        var prompt: String?
        for (i, item) in input.enumerated() {
            guard prompt == nil else {
                throw .invalid(
                    "with conversation, a user message ends the input (it becomes the conversation's next turn)",
                    param: "input[\(i)]")
            }
            switch item.type {
            case "function_call_output":
                results.append(
                    (i, ChatMessage(role: .tool, content: item.output ?? "", toolCallID: item.callID ?? "")))
            case "message" where item.role == "user":
                prompt = item.text
            default:
                throw .invalid(
                    "with conversation, input is one user message, function_call_output items or both; input[\(i)] is a \(item.type == "message" ? "\(item.role) message" : item.type)",
                    param: "input[\(i)]")
            }
        }
        if prompt == nil, results.isEmpty {
            throw .invalid(
                "with conversation, input must be one user message (it becomes the conversation's next turn)",
                param: "input")
        }
        return (prompt ?? "", results)
    }

    /// A turn's refusal naming a result's field as the caller wrote it (`input[i].call_id`, not
    /// the native `tool_results[j].tool_call_id`).
    static func inputError(_ error: HTTPError, results: [(index: Int, message: ChatMessage)]) -> OpenAIError {
        var e = OpenAIError(error)
        e.renameResult(in: "input", indexes: results.map(\.index), idField: "call_id", textField: "output")
        return e
    }

    /// The conversation's transcript as the messages a stored response keeps.
    static func history(of session: Session) async -> [HistoryMessage] {
        await session.snapshot(backend: nil).entries.compactMap { e -> HistoryMessage? in
            switch e.kind {
            case .instructions, .deleted: nil
            case .prompt: HistoryMessage(role: "user", content: e.content)
            case .response: HistoryMessage(role: "assistant", content: e.content, toolCalls: e.toolCalls)
            case .toolResult: HistoryMessage(role: "tool", content: e.content, toolCallID: e.toolCallID)
            case .userItem, .assistantItem, .systemItem, .developerItem:
                HistoryMessage(role: e.kind.itemRole ?? "user", content: e.content)
            }
        }
    }
}
