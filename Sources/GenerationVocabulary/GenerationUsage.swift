public struct GenerationUsage: Sendable, Equatable, Codable {
    public var promptTokens: Int
    public var completionTokens: Int
    /// Prompt tokens taken from the sequence's cache instead of being computed.
    public var cachedTokens: Int

    /// Public so a backend other than this engine (a remote or scripted one) can report usage.
    public init(promptTokens: Int, completionTokens: Int, cachedTokens: Int) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.cachedTokens = cachedTokens
    }
}
