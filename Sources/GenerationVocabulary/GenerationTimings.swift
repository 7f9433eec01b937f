public struct GenerationTimings: Sendable, Equatable, Codable {
    public var promptMilliseconds: Double
    public var generationMilliseconds: Double
    public var promptTokensPerSecond: Double
    public var generationTokensPerSecond: Double

    public init(
        promptMilliseconds: Double, generationMilliseconds: Double, promptTokensPerSecond: Double,
        generationTokensPerSecond: Double
    ) {
        self.promptMilliseconds = promptMilliseconds
        self.generationMilliseconds = generationMilliseconds
        self.promptTokensPerSecond = promptTokensPerSecond
        self.generationTokensPerSecond = generationTokensPerSecond
    }
}
