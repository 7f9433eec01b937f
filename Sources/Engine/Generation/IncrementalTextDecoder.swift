/// Turns token ids into text as they arrive, holding back incomplete UTF-8.
public protocol IncrementalTextDecoder: Sendable {
    /// The text completed by this token ("" while a character is still incomplete).
    mutating func append(_ id: Int32) -> String
    /// The bytes token `id` adds to the text (what a log-probability entry shows of it).
    func bytes(of id: Int32) -> [UInt8]
    /// The bytes of `id` as a prompt spells it: control tokens written out (`<|im_start|>`), so
    /// a scored prompt's tokens spell the prompt as given.
    func spelledBytes(of id: Int32) -> [UInt8]
}

extension IncrementalTextDecoder {
    /// By default, the same as the text's.
    public func spelledBytes(of id: Int32) -> [UInt8] { bytes(of: id) }
}
