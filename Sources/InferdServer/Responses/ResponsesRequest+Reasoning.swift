extension ResponsesRequest {
    /// A `reasoning` item given back in `input` (as a client managing its own context sends an
    /// earlier response's output): its `content` (`reasoning_text` parts) is the reasoning, or,
    /// without content, its `summary` (`summary_text` parts). It goes to the template with the
    /// assistant turn after it (`HistoryMessage.of`). `encrypted_content` is refused: inferd
    /// never makes it, so it cannot read one.
    static func reasoningItem(_ m: OpenAIFields) throws(OpenAIError) -> ResponseItem {
        let known = ["type", "id", "status", "summary", "content", "encrypted_content"]
        if let unknown = m.values.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalid(
                "Unknown parameter: '\(m.name(unknown))'.", param: m.name(unknown), code: .unknownParameter)
        }
        if let encrypted = m["encrypted_content"], !encrypted.isNull {
            throw .unsupported(
                "\(m.name("encrypted_content")): encrypted reasoning is not supported (inferd's reasoning is plain text)",
                param: m.name("encrypted_content"))
        }
        let content = try parts(m, "content", type: "reasoning_text")
        let summary = try parts(m, "summary", type: "summary_text")
        guard m["summary"] != nil || m["content"] != nil else {
            throw .invalid(
                "\(m.name("summary")) is required", param: m.name("summary"), code: .missingRequiredParameter)
        }
        let text = content.isEmpty ? summary.joined(separator: "\n\n") : content.joined()
        let id = try m.id("id") ?? ResponseObject.makeID("rs")
        return .reasoning(text, id: id)
    }

    /// The texts of a reasoning item's `key` list, each part `{"type": type, "text": …}`.
    static func parts(_ m: OpenAIFields, _ key: String, type: String) throws(OpenAIError) -> [String] {
        guard let raw = m[key], !raw.isNull else { return [] }
        guard case .array(let items) = raw else { throw m.typeError(key, "a list of \(type) parts", raw) }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            let path = "\(m.name(key))[\(i)]"
            guard case .object(let o) = item else {
                throw .invalid("\(path) must be an object", param: path, code: .invalidType)
            }
            let p = OpenAIFields(o, path: path)
            guard try p.string("type") == type else {
                throw .unsupported("\(path).type: only \(type) parts are supported", param: p.name("type"))
            }
            guard let text = try p.string("text") else {
                throw .invalid("\(path).text is required", param: p.name("text"), code: .missingRequiredParameter)
            }
            out.append(text)
        }
        return out
    }
}
