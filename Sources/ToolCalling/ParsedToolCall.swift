/// A call found in an answer (or in the answer so far, while it streams).
public struct ParsedToolCall: Sendable, Hashable {
    /// The function's name: shown only once written whole, and never changed after.
    public var name: String
    /// The arguments object's JSON text exactly as the model wrote it (JSON formats: a substring
    /// of the answer; `pythonic`: the call's keyword arguments converted to JSON). While the call
    /// streams, each snapshot's text is a prefix of the next one's.
    public var arguments: String
    /// The call's markup closed. A call still open at the end of the answer (`max_tokens`) stays
    /// false: the caller does not treat it as a call.
    public var complete: Bool

    public init(name: String, arguments: String, complete: Bool) {
        self.name = name
        self.arguments = arguments
        self.complete = complete
    }
}
