import Engine
import HTTPServer

/// The tool fields of a native body (`/v1/generations`, a session turn): `tools` in the flat
/// shape of OpenAI's Responses API (`{"type": "function", "name", "description", "parameters",
/// "strict"}`), `tool_choice` (`auto`, `none`, `required` or `{"type": "function", "name": …}`),
/// `parallel_tool_calls`, and for a session turn `tool_results`
/// (`[{"tool_call_id": "call_…", "content": "…"}]`) answering the calls of its earlier responses.
struct NativeToolFields: Sendable {
    var use: ToolUse?
    /// `tool` messages, in the order given.
    var results: [ChatMessage] = []

    static let fieldNames: Set<String> = ["tools", "tool_choice", "parallel_tool_calls"]

    init(use: ToolUse?, results: [ChatMessage] = []) {
        self.use = use
        self.results = results
    }
    static let resultsField = "tool_results"

    init(_ f: NativeFields, results allowResults: Bool = false) throws(HTTPError) {
        do {
            use = try OpenAIToolsRequest.read(f.fields, flat: true)
        } catch {
            throw HTTPError(error)
        }
        guard allowResults, let raw = f.fields[Self.resultsField] else { return }
        guard case .array(let items) = raw else {
            throw .badRequest(
                "\(Self.resultsField) must be an array, got \(raw.typeName)", code: .invalidValue,
                param: Self.resultsField)
        }
        for (i, item) in items.enumerated() {
            let path = "\(Self.resultsField)[\(i)]"
            guard case .object(let o) = item else {
                throw .badRequest("\(path) must be an object, got \(item.typeName)", code: .invalidValue, param: path)
            }
            let r = try NativeFields(OpenAIFields(o, path: path), allowed: ["tool_call_id", "content"])
            let id = try r.requiredString("tool_call_id")
            guard !id.isEmpty else {
                throw .badRequest(
                    "\(path).tool_call_id must not be empty", code: .invalidValue, param: "\(path).tool_call_id")
            }
            results.append(ChatMessage(role: .tool, content: try r.requiredString("content"), toolCallID: id))
        }
    }
}

extension OpenAIError {
    /// This refusal naming a tool result's field as the caller wrote it: a native
    /// `tool_results[j].tool_call_id` (or `.content`) becomes `<list>[i].<idField>` (or
    /// `<textField>`), where `indexes[j]` is the result's place `i` in the caller's list.
    mutating func renameResult(in list: String, indexes: [Int], idField: String, textField: String) {
        let prefix = NativeToolFields.resultsField + "["
        guard let param, param.hasPrefix(prefix),
            let j = Int(param.dropFirst(prefix.count).prefix { $0.isNumber }), j < indexes.count
        else { return }
        let renamed = "\(list)[\(indexes[j])].\(param.hasSuffix(".tool_call_id") ? idField : textField)"
        self.param = renamed
        message = message.replacingOccurrences(of: param, with: renamed)
    }
}

extension HTTPError {
    /// An OpenAI-shaped refusal from the shared tool checks, on a native route.
    init(_ e: OpenAIError) {
        self.init(
            status: e.status, message: e.message, type: e.type, code: e.code ?? .invalidValue, param: e.param,
            retryAfterSeconds: e.retryAfterSeconds)
    }
}
