/// One file of the chat page as the server sends it: its path, media type, bytes and validator.
public struct ChatPageAsset: Sendable {
    public let path: String
    public let contentType: String
    public let bytes: [UInt8]
    /// A strong validator of the bytes (`"` FNV-1a 64 `"`): a reload asks `If-None-Match` and
    /// gets 304 while the binary is the same.
    public let etag: String

    init(path: String, contentType: String, bytes: [UInt8]) {
        self.path = path
        self.contentType = contentType
        self.bytes = bytes
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            hash ^= UInt64(b)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        etag = "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }
}
