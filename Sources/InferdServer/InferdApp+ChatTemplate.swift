import Engine
import HTTPServer

/// Chat prompts through the engine's chat template, with its errors as 400 `invalid_request`
/// (no template configured, or the template refuses the conversation).
extension InferdApp {
    static func httpError(for error: ChatTemplateError) -> HTTPError {
        .badRequest("\(error)", code: "invalid_request")
    }

    func chatPromptTokens(_ engine: InferenceEngine, _ messages: [ChatMessage]) throws(HTTPError) -> [Int32] {
        do {
            return try engine.promptTokens(for: messages)
        } catch {
            throw Self.httpError(for: error)
        }
    }
}
