/// What a `GenerationRequest` carries: a recipe for a fresh `LogitsProcessor` per generation.
/// `identity` says which outputs it allows: two constraints with equal identities allow the same
/// outputs (it is part of the single-flight key).
public protocol GenerationConstraint: Sendable {
    var identity: String { get }
    func makeProcessor() -> any LogitsProcessor
}
