import ToolCalling

/// `tool_call_format`: how tool calls are written in this model's answers. `auto` reads it from
/// the chat template (as llama.cpp does, by what the template contains); a name forces one.
public enum ToolCallFormatSetting: String, SettingChoice {
    case auto
    case hermes
    case llama3Json = "llama3_json"
    case pythonic
    case generic

    var settingName: String { rawValue }

    /// The format for a model whose template is `templateSource` (nil: it has none).
    func format(templateSource: String?) -> any ToolCallFormat {
        if self != .auto, let forced = ToolCallFormats.named(rawValue) { return forced }
        return ToolCallFormats.detect(templateSource: templateSource)
    }
}
