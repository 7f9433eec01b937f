import Backend
import Engine
import HTTPServer

/// Prompts through the backend (a conversation through its chat template), with its errors as
/// 400 `invalid_request` (no template configured, or the template refuses the conversation).
extension InferdApp {
    static func httpError(for error: ChatTemplateError) -> HTTPError {
        .badRequest("\(error)", code: "invalid_request")
    }

    func preparePrompt(_ backend: any GenerationBackend, _ input: PromptInput) throws(HTTPError) -> PreparedPrompt {
        do {
            return try backend.prepare(input)
        } catch {
            throw Self.httpError(for: error)
        }
    }
}
