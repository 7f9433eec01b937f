/// Turns token ids into text as they arrive, holding back incomplete UTF-8.
public protocol IncrementalTextDecoder: Sendable {
    /// The text completed by this token ("" while a character is still incomplete).
    mutating func append(_ id: Int32) -> String
    /// The bytes token `id` adds to the text (what a log-probability entry shows of it).
    func bytes(of id: Int32) -> [UInt8]
}
