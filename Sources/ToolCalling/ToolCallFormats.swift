/// The formats by name, and the one a chat template's source implies.
public enum ToolCallFormats {
    public static let names = ["hermes", "llama3_json", "pythonic", "generic"]

    public static func named(_ name: String) -> (any ToolCallFormat)? {
        switch name {
        case "hermes": HermesFormat()
        case "llama3_json": Llama3JSONFormat()
        case "pythonic": PythonicFormat()
        case "generic": GenericFormat()
        default: nil
        }
    }

    /// The format a chat template writes calls in, by what its source contains (as llama.cpp
    /// decides), first match wins:
    /// - `<tool_call>` → hermes (Hermes 2 Pro, Qwen 2.5, Qwen 3);
    /// - `[func_name1(` → pythonic (the pythonic prompt of Llama 3.2's docs and the templates
    ///   written after it);
    /// - `<|python_tag|>` or `<|start_header_id|>ipython` → llama3_json (Llama 3.1–3.3);
    /// - anything else, or no template → generic (the tools go in a system text, `instruction`).
    public static func detect(templateSource: String?) -> any ToolCallFormat {
        guard let source = templateSource else { return GenericFormat() }
        if source.contains("<tool_call>") { return HermesFormat() }
        if source.contains("[func_name1(") { return PythonicFormat() }
        if source.contains("<|python_tag|>") || source.contains("<|start_header_id|>ipython") {
            return Llama3JSONFormat()
        }
        return GenericFormat()
    }
}
