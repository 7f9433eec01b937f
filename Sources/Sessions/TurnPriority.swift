import Engine

/// Background requests start only when no interactive request waits.
public enum TurnPriority: String, Sendable, CaseIterable {
    case interactive
    case background
}
