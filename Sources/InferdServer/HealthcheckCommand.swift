import Foundation

/// `inferd healthcheck`: exits 0 when `GET /health` answers 200, 1 otherwise. For container
/// health checks, so the image needs no curl; reads host, port and TLS settings like `serve`
/// does, and speaks HTTPS when `tls_cert` is set.
enum HealthcheckCommand {
    static func run(arguments: [String]) -> Int32 {
        let config: ServerConfiguration
        do {
            config = try ServerConfiguration.load(
                arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            return InferdCLI.fail("\(error)", code: 2)
        }
        do {
            let client = LoopbackClient(host: config.host, port: config.port, timeoutSeconds: 3)
            let status =
                config.tlsCert.isEmpty
                ? try client.status("GET", "/health") : try client.statusOverTLS("GET", "/health")
            guard status == 200 else { return InferdCLI.fail("unhealthy: /health answered \(status)") }
            return 0
        } catch {
            return InferdCLI.fail("unhealthy: \(error)")
        }
    }
}
