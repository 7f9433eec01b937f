import Foundation

/// The PostgreSQL server the tests use: `scripts/with-postgres.sh` (run by `make postgres-test`)
/// starts a throwaway one and exports its URL. When it says a server is expected
/// (`INFERD_EXPECT_POSTGRES=1`) and none is given, the PostgreSQL tests fail: they never pass by
/// skipping. Without either variable they are reported skipped (`swift test` alone).
public enum TestPostgres {
    public static var url: String? {
        ProcessInfo.processInfo.environment["INFERD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    public static var expected: Bool { ProcessInfo.processInfo.environment["INFERD_EXPECT_POSTGRES"] == "1" }
    /// Whether PostgreSQL tests run (and must pass).
    public static var enabled: Bool { url != nil || expected }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A new, empty database on the test server; its URL.
    public static func freshDatabase() throws -> String {
        guard let url else {
            throw ClientError(
                description:
                    "PostgreSQL expected (INFERD_EXPECT_POSTGRES=1) but INFERD_TEST_POSTGRES_URL is unset: run the tests through scripts/with-postgres.sh"
            )
        }
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try run("/usr/bin/env", ["psql", url, "-v", "ON_ERROR_STOP=1", "-qc", "CREATE DATABASE \(name)"])
        return withDatabase(url, name)
    }

    /// `url` naming database `name` instead of its own.
    public static func withDatabase(_ url: String, _ name: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return url + "/" + name }
        let end = rest[slash...].firstIndex(of: "?") ?? rest.endIndex
        return url.replacingCharacters(in: slash..<end, with: "/" + name)
    }

    /// A cluster of the test's own (to stop mid-run): its URL and folder. `stopCluster` removes it.
    /// With `password`, the cluster's user needs it (scram-sha-256).
    public static func startCluster(password: String? = nil) throws -> (url: String, dir: String) {
        let dir = "/tmp/inferd-pgt-" + UUID().uuidString.prefix(8)
        let script = packageRoot.appendingPathComponent("scripts/pg-cluster.sh").path
        let out =
            try password.map { try run("/usr/bin/env", ["PG_PASSWORD=\($0)", script, "start", dir]) }
            ?? run(script, ["start", dir])
        return (out.trimmingCharacters(in: .whitespacesAndNewlines), dir)
    }

    /// Stops the cluster's server at once (connections cut) or starts it again.
    public static func pauseCluster(_ dir: String) throws {
        try run(packageRoot.appendingPathComponent("scripts/pg-cluster.sh").path, ["pause", dir])
    }
    public static func resumeCluster(_ dir: String) throws {
        try run(packageRoot.appendingPathComponent("scripts/pg-cluster.sh").path, ["resume", dir])
    }

    public static func stopCluster(_ dir: String) {
        _ = try? run(packageRoot.appendingPathComponent("scripts/pg-cluster.sh").path, ["stop", dir])
    }

    /// Runs a command; its standard output. A non-zero exit is an error with its standard error.
    /// Output goes through files, not pipes: a server the command leaves running (pg_ctl start)
    /// may inherit a pipe and keep it open, and reading it to its end would then never return.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-run-\(UUID().uuidString)")
        let outURL = base.appendingPathExtension("out")
        let errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = try FileHandle(forWritingTo: outURL)
        p.standardError = try FileHandle(forWritingTo: errURL)
        try p.run()
        p.waitUntilExit()
        let output = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        guard p.terminationStatus == 0 else {
            let error = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            throw ClientError(
                description:
                    "\(executable) \(arguments.joined(separator: " ")) failed (\(p.terminationStatus)): \(error)")
        }
        return output
    }
}
