import Engine
import StructuredOutput

/// A chat completion's `tools`, `tool_choice` and `parallel_tool_calls`, checked: every
/// function tool has a valid, unique name and an object schema; a named choice names one of
/// them. Other tool types (OpenAI's built-in ones) are 400 naming the type. `flat`: the
/// Responses API's shape, a function's fields on the tool itself (`{"type": "function", "name", …}`)
/// and a named choice as `{"type": "function", "name": …}`.
enum OpenAIToolsRequest {
    /// OpenAI's rule for function names: letters, digits, `_` and `-`, at most 64.
    static func validName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
                    || b == 0x2D
            }
    }

    /// The request's tool use; nil when it gives no tools (a `tool_choice` other than `none`
    /// then is a 400, as OpenAI answers).
    static func read(_ f: OpenAIFields, flat: Bool = false) throws(OpenAIError) -> ToolUse? {
        let tools = try definitions(f, flat: flat)
        let parallel = try f.bool("parallel_tool_calls") ?? true
        let choice = try self.choice(f, tools: tools, flat: flat)
        guard !tools.isEmpty else {
            if let choice, choice != .none {
                throw .invalid("tool_choice requires tools", param: "tool_choice")
            }
            return nil
        }
        return ToolUse(tools: tools, choice: choice ?? .auto, parallel: parallel)
    }

    static func definitions(_ f: OpenAIFields, flat: Bool = false) throws(OpenAIError) -> [ToolDefinition] {
        guard let raw = f["tools"] else { return [] }
        guard case .array(let items) = raw else { throw f.typeError("tools", "an array", raw) }
        var tools: [ToolDefinition] = []
        for (i, item) in items.enumerated() {
            let path = "tools[\(i)]"
            guard case .object(let o) = item else {
                throw .invalid("\(path) must be an object, got \(item.typeName)", param: path, code: .invalidType)
            }
            let t = OpenAIFields(o, path: path, ordered: f.ordered == nil ? nil : orderedItem(f, "tools", i))
            let type = try t.string("type")
            guard type == "function" else {
                throw .unsupported(
                    "\(path).type '\(type ?? "")': only function tools are supported", param: t.name("type"))
            }
            if flat {
                tools.append(try definition(t))
                continue
            }
            guard let function = try t.object("function") else {
                throw .invalid(
                    "\(path).function is required", param: t.name("function"), code: .missingRequiredParameter)
            }
            tools.append(try definition(function))
        }
        var seen = Set<String>()
        for (i, tool) in tools.enumerated() where !seen.insert(tool.name).inserted {
            let field = flat ? "tools[\(i)].name" : "tools[\(i)].function.name"
            throw .invalid("\(field) '\(tool.name)' is given twice", param: field)
        }
        return tools
    }

    /// One function: `name`, `description`, `parameters` (a JSON Schema object, kept in its key
    /// order as compact JSON text) and `strict`.
    static func definition(_ function: OpenAIFields) throws(OpenAIError) -> ToolDefinition {
        guard let name = try function.string("name") else {
            throw .invalid(
                "\(function.name("name")) is required", param: function.name("name"), code: .missingRequiredParameter)
        }
        guard validName(name) else {
            throw .invalid(
                "\(function.name("name")) must be 1 to 64 letters, digits, '_' or '-', got '\(name.prefix(80))'",
                param: function.name("name"))
        }
        let description = try function.string("description")
        var parameters: String?
        if let raw = function["parameters"] {
            guard case .object = raw else { throw function.typeError("parameters", "a JSON Schema object", raw) }
            parameters = (function.orderedValue("parameters") ?? JSONValue(raw)).compactText
        }
        let strict = try function.bool("strict") ?? false
        return ToolDefinition(name: name, description: description, parameters: parameters, strict: strict)
    }

    /// `tool_choice`: `auto`, `none`, `required` or `{"type": "function", "function": {"name": …}}`.
    static func choice(_ f: OpenAIFields, tools: [ToolDefinition], flat: Bool = false) throws(OpenAIError)
        -> ToolChoice?
    {
        guard let raw = f["tool_choice"] else { return nil }
        switch raw {
        case .string("auto"): return .auto
        case .string("none"): return ToolChoice.none
        case .string("required"): return .required
        case .string(let other):
            throw .invalid(
                "tool_choice must be auto, none, required or a function, got '\(other.prefix(40))'",
                param: "tool_choice")
        case .object(let o):
            let c = OpenAIFields(o, path: "tool_choice")
            guard try c.string("type") == "function" else {
                throw .unsupported("tool_choice.type: only function is supported", param: "tool_choice.type")
            }
            let field = flat ? "tool_choice.name" : "tool_choice.function.name"
            let holder = flat ? c : try c.object("function")
            guard let name = try holder?.string("name") else {
                throw .invalid("\(field) is required", param: field, code: .missingRequiredParameter)
            }
            guard tools.contains(where: { $0.name == name }) else {
                throw .invalid("\(field) '\(name.prefix(80))' is not one of the tools", param: field)
            }
            return .function(name)
        default:
            throw f.typeError("tool_choice", "a string or an object", raw)
        }
    }

    /// The `index`th element of an array member as the body wrote it (keys in order).
    static func orderedItem(_ f: OpenAIFields, _ key: String, _ index: Int) -> JSONValue? {
        guard case .array(let items)? = f.orderedValue(key), index < items.count else { return nil }
        return items[index]
    }
}
