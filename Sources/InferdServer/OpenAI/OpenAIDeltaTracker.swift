import Telemetry

/// Turns the engine's snapshots (the whole answer so far) into OpenAI deltas (only what is new).
/// Snapshots only ever grow, never split a UTF-8 character and never show a stop string, so the
/// delta is the new suffix and inherits all three properties.
final class OpenAIDeltaTracker: Sendable {
    private let sent = Locked("")

    /// The text not sent yet, or nil when there is none; it counts as sent from now on.
    /// A snapshot that does not extend what was sent (never expected) yields nothing.
    func delta(for content: String) -> String? {
        sent.withLock { sent in
            guard content.utf8.count > sent.utf8.count, content.utf8.starts(with: sent.utf8) else { return nil }
            let piece = String(decoding: content.utf8.dropFirst(sent.utf8.count), as: UTF8.self)
            sent = content
            return piece
        }
    }

    var text: String { sent.withLock { $0 } }
}
