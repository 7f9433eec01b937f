import Testing

/// The suites that open sockets (transfers, scripted upstreams, health checks) run one after
/// another: `FakeUpstreamTests` counts this process's open sockets to prove a transfer leaves
/// none, which another suite's sockets would disturb. (`.serialized` applies to nested suites.)
@Suite(.serialized) enum RemoteEndToEnd {}
