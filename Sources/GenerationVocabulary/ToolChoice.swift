/// Whether and which tool the model must call (`tool_choice`).
public enum ToolChoice: Sendable, Hashable {
    /// The model decides: a plain answer, or calls (the default when tools are given).
    case auto
    /// Never a call: the tools are only shown to the model.
    case none
    /// At least one call, to any of the tools.
    case required
    /// Exactly this function.
    case function(String)
}
