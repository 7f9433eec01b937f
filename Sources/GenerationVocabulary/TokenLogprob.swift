/// One generated token's log-probability (natural log) and the most likely alternatives at its
/// place, as the engine computed them. `bytes` are the token's own bytes (a token may hold part
/// of a UTF-8 character, so they are not always text on their own).
public struct TokenLogprob: Sendable, Equatable {
    public struct Alternative: Sendable, Equatable {
        public var id: Int32
        public var bytes: [UInt8]
        public var logprob: Float

        public init(id: Int32, bytes: [UInt8], logprob: Float) {
            self.id = id
            self.bytes = bytes
            self.logprob = logprob
        }
    }

    public var id: Int32
    public var bytes: [UInt8]
    public var logprob: Float
    /// The most likely tokens at this place, most likely first (ties: lower id first); at most
    /// the request's `top`, and only tokens that could have been drawn.
    public var top: [Alternative]

    public init(id: Int32, bytes: [UInt8], logprob: Float, top: [Alternative]) {
        self.id = id
        self.bytes = bytes
        self.logprob = logprob
        self.top = top
    }
}
