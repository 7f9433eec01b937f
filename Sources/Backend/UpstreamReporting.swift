/// A backend that sends generations to other servers reports them, so `/health` can list them
/// without knowing how the backend reaches them.
public protocol UpstreamReporting: Sendable {
    var upstreamStatuses: [UpstreamStatus] { get }
}

/// One upstream as `/health` shows it.
public struct UpstreamStatus: Sendable, Equatable, Encodable {
    /// Its base URL, credentials removed.
    public var url: String
    /// `up` or `down`, as the health checks last found it.
    public var status: String
    /// Generations running on it now.
    public var active: Int
    public var weight: Int
    /// Generations it may run at once.
    public var maxActive: Int

    public init(url: String, up: Bool, active: Int, weight: Int, maxActive: Int) {
        self.url = url
        self.status = up ? "up" : "down"
        self.active = active
        self.weight = weight
        self.maxActive = maxActive
    }

    public var isUp: Bool { status == "up" }

    enum CodingKeys: String, CodingKey {
        case url, status, active, weight
        case maxActive = "max_active"
    }
}
