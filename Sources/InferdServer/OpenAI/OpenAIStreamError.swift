/// The in-stream error object, as OpenAI's clients expect it: `{"error":{…}}`.
struct OpenAIStreamError: Encodable, Sendable {
    var error: OpenAIError
}
