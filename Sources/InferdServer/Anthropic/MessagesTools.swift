import Engine
import StructuredOutput

/// A Messages request's `tools` and `tool_choice`, as a `ToolUse` the shared tool machinery
/// enforces by grammar: `any` and a named `tool` force a call whose `input` matches its
/// `input_schema`, `none` never calls, `disable_parallel_tool_use` allows one call. Server tools
/// (`web_search_…`, `bash_…`, `text_editor_…`, any `type` but `custom`) are refused naming the type.
enum MessagesTools {
    static func read(_ f: OpenAIFields) throws(OpenAIError) -> ToolUse? {
        let tools = try definitions(f)
        guard let rawChoice = f["tool_choice"] else { return tools.isEmpty ? nil : ToolUse(tools: tools) }
        guard case .object(let o) = rawChoice else {
            throw .invalid("tool_choice: must be an object", param: "tool_choice", code: .invalidType)
        }
        let c = OpenAIFields(o, path: "tool_choice")
        let type = try c.string("type")
        let allowedKeys: Set<String> =
            switch type {
            case "tool": ["type", "name", "disable_parallel_tool_use"]
            case "none": ["type"]
            default: ["type", "disable_parallel_tool_use"]
            }
        if let other = c.values.keys.sorted().first(where: { !allowedKeys.contains($0) }) {
            throw .invalid(
                "tool_choice.\(other): unknown field", param: "tool_choice.\(other)", code: .unknownParameter)
        }
        let parallel = !(try c.bool("disable_parallel_tool_use") ?? false)
        let choice: ToolChoice
        switch type {
        case "auto": choice = .auto
        case "any": choice = .required
        case "none": choice = ToolChoice.none
        case "tool":
            guard let name = try c.string("name") else {
                throw .invalid(
                    "tool_choice.name: field required", param: "tool_choice.name", code: .missingRequiredParameter)
            }
            guard tools.contains(where: { $0.name == name }) else {
                throw .invalid(
                    "tool_choice.name: '\(name.prefix(80))' is not one of the tools", param: "tool_choice.name")
            }
            choice = .function(name)
        default:
            throw .invalid("tool_choice.type: must be auto, any, tool or none", param: "tool_choice.type")
        }
        guard !tools.isEmpty else {
            if choice == .none { return nil }
            throw .invalid("tool_choice: requires tools", param: "tool_choice")
        }
        return ToolUse(tools: tools, choice: choice, parallel: parallel)
    }

    /// `tools`: each `{"name", "description"?, "input_schema", "cache_control"?, "type"?: "custom"}`.
    static func definitions(_ f: OpenAIFields) throws(OpenAIError) -> [ToolDefinition] {
        guard let raw = f["tools"] else { return [] }
        guard case .array(let items) = raw else {
            throw .invalid("tools: must be a list", param: "tools", code: .invalidType)
        }
        var out: [ToolDefinition] = []
        for (i, item) in items.enumerated() {
            let path = "tools.\(i)"
            guard case .object(let o) = item else { throw .invalid("\(path): must be an object", param: path) }
            let t = OpenAIFields(
                o, path: path, ordered: f.ordered == nil ? nil : OpenAIToolsRequest.orderedItem(f, "tools", i))
            if let type = try t.string("type"), type != "custom" {
                throw .unsupported(
                    "\(path).type: '\(type.prefix(60))': server tools are not supported; give client tools (name, description, input_schema)",
                    param: "\(path).type")
            }
            try MessagesContent.keys(t, ["type", "name", "description", "input_schema", "cache_control"])
            try MessagesContent.cacheControl(t)
            guard let name = try t.string("name") else {
                throw .invalid("\(path).name: field required", param: "\(path).name", code: .missingRequiredParameter)
            }
            guard OpenAIToolsRequest.validName(name) else {
                throw .invalid(
                    "\(path).name: must be 1 to 64 letters, digits, '_' or '-', got '\(name.prefix(80))'",
                    param: "\(path).name")
            }
            guard let schema = t["input_schema"] else {
                throw .invalid(
                    "\(path).input_schema: field required", param: "\(path).input_schema",
                    code: .missingRequiredParameter)
            }
            guard case .object(let s) = schema, s["type"] == .string("object") else {
                throw .invalid(
                    "\(path).input_schema: must be a JSON Schema object with type object", param: "\(path).input_schema"
                )
            }
            if out.contains(where: { $0.name == name }) {
                throw .invalid("\(path).name: '\(name)' is given twice", param: "\(path).name")
            }
            let parameters = (t.orderedValue("input_schema") ?? JSONValue(schema)).compactText
            // Anthropic's client tools are always kept to their schema: strict.
            out.append(
                ToolDefinition(
                    name: name, description: try t.string("description"), parameters: parameters, strict: true))
        }
        return out
    }
}
