/// A message item of the Responses API: an input item (`input_text` parts; `output_text` for an
/// assistant's) or the output message (one `output_text` part).
struct ResponseItem: Codable, Sendable, Equatable {
    struct Part: Codable, Sendable, Equatable {
        var type: String
        var text: String
        /// Present (empty) on `output_text` parts, as OpenAI's clients expect.
        var annotations: [String]?

        static func output(_ text: String) -> Part { Part(type: "output_text", text: text, annotations: []) }
    }

    var id: String
    var type = "message"
    /// `in_progress`, `completed` or `incomplete`.
    var status: String
    /// `user`, `assistant`, `system` or `developer`.
    var role: String
    var content: [Part]

    /// An input message, its parts typed by role.
    static func input(role: String, text: String) -> ResponseItem {
        ResponseItem(
            id: ResponseObject.makeID("msg"), status: "completed", role: role,
            content: [role == "assistant" ? .output(text) : Part(type: "input_text", text: text)])
    }

    /// All of the item's text, as the model sees it.
    var text: String { content.map(\.text).joined() }
}
