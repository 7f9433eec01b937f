/// Cuts a byte stream into lines (LF or CRLF ended), holding at most `maxLineBytes` of an
/// unfinished line: a peer that never ends its line is an error, not unbounded memory.
struct LineSplitter {
    let maxLineBytes: Int
    private var pending: [UInt8] = []

    init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
        pending.reserveCapacity(min(maxLineBytes, 4096))
    }

    enum Failure: Error, Equatable {
        case lineTooLong(limit: Int)
    }

    /// Feeds `bytes`; calls `line` for each completed line (without its terminator) and stops at
    /// the first `false` it returns (returning false too).
    mutating func feed(
        _ bytes: UnsafeRawBufferPointer, _ line: (String) -> Bool
    ) throws(Failure) -> Bool {
        var start = 0
        for i in 0..<bytes.count where bytes[i] == UInt8(ascii: "\n") {
            pending.append(contentsOf: bytes[start..<i])
            start = i + 1
            guard pending.count <= maxLineBytes else { throw .lineTooLong(limit: maxLineBytes) }
            if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
            let text = String(decoding: pending, as: UTF8.self)
            pending.removeAll(keepingCapacity: true)
            if !line(text) { return false }
        }
        pending.append(contentsOf: bytes[start...])
        guard pending.count <= maxLineBytes else { throw .lineTooLong(limit: maxLineBytes) }
        return true
    }

    /// The unfinished last line, if the stream ended without a terminator.
    var remainder: String? { pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self) }
}
