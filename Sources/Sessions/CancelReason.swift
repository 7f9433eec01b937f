import Engine

/// Why a request was stopped, as the owner that stopped it names it.
public struct CancelReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let clientDisconnected = CancelReason(rawValue: "client_disconnected")
    public static let cancelRequest = CancelReason(rawValue: "cancel_request")
    public static let superseded = CancelReason(rawValue: "superseded")
    public static let sessionDeleted = CancelReason(rawValue: "session_deleted")
    public static let shutdown = CancelReason(rawValue: "shutdown")

    public var description: String { rawValue }
}
