/// Which waiting generations start first: interactive ones (someone is watching the answer
/// arrive) before background ones (batch work), first come first served within each.
/// Sessions use the same words for their own queue (`TurnPriority`).
public enum GenerationPriority: String, Sendable, CaseIterable {
    case interactive
    case background
}
