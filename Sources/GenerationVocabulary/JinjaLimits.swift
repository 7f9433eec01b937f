/// Bounds on what one template may do, so an untrusted template fails with a `JinjaError`
/// instead of hanging, exhausting memory or overflowing the stack.
public struct JinjaLimits: Sendable, Equatable {
    public enum Bound: String, Sendable, Equatable {
        case steps = "evaluation steps"
        case loopIterations = "loop iterations"
        case nesting = "nesting depth"
        case macroCalls = "macro call depth"
        case outputLength = "output length (bytes)"
        case valueSize = "value size (bytes or items)"
    }

    /// Evaluation steps (one per node evaluated, plus one per 64 bytes a string operation makes).
    public var maxSteps = 5_000_000
    /// Iterations of all loops together.
    public var maxLoopIterations = 1_000_000
    /// Nesting of blocks and expressions, when parsing and when evaluating.
    public var maxNesting = 96
    /// Macros calling macros.
    public var maxMacroCalls = 24
    /// Bytes of rendered output (a prompt of the longest context is well under 1 MiB).
    public var maxOutputBytes = 8 << 20
    /// Bytes in one string, items in one list or dict.
    public var maxValueSize = 4 << 20

    public init() {}
}
