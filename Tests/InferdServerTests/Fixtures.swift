import Engine
import Foundation
import HTTPServer
import Sessions
import Telemetry
import TestSupport
import Timekeeping

@testable import InferdServer

/// The real model, loaded once per test process and shared by the end-to-end suites.
enum SharedModel {
    static var path: String {
        TestPaths.packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
    }

    static let loaded: Result<InferenceEngine, any Error> = Result {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ClientError(description: "model missing at \(path): run `make model` (make test does it)")
        }
        // The suites share it and run in parallel, often more than the default 8 generations at
        // once; none of them is about capacity (AdmissionEndToEndTests has an engine of its own),
        // so this one lets them all run at once, as the engine did before it had a queue.
        return try InferenceEngine(
            path: path, threads: 2, admission: AdmissionPolicy(maxActiveSequences: 64, maxQueue: 256))
    }

    static func engine() throws -> InferenceEngine { try loaded.get() }
}

/// A server on a free port over the shared model, with its own metrics and captured logs.
struct RunningServer {
    let app: InferdApp
    let server: HTTPServer
    let metrics: Metrics
    let logs: LogCapture
    var port: Int { server.boundPort }

    /// `metrics`: pass the registry the engine of `state` reports to, to see its series too.
    /// `clock`: the time the app and the HTTP server decide with (pass the engine's own, so a
    /// test moves every deadline at once).
    static func start(
        state: ModelHost.State? = nil, metrics: Metrics = Metrics(), clock: any TimeSource = .system,
        responses: (any ResponseStoring)? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws -> RunningServer {
        var config = ServerConfiguration()
        config.port = 0
        config.drainSeconds = 2
        configure(&config)
        let host = ModelHost(
            singleFlight: config.singleFlight, perKeyMaxGenerations: config.effectivePerKeyMaxGenerations)
        host.finish(try state ?? .ready(SharedModel.engine()))
        let logs = LogCapture()
        let app = InferdApp(
            configuration: config, host: host, logger: logs.logger, metrics: metrics, responses: responses,
            clock: clock)
        let server = HTTPServer(
            configuration: try HTTPServer.Configuration(config), router: app.makeRouter(), logger: logs.logger,
            metrics: metrics, clock: clock)
        try server.start()
        return RunningServer(app: app, server: server, metrics: metrics, logs: logs)
    }

    func client(timeout: Double = 120) throws -> TestClient { try TestClient(port: port, timeout: timeout) }

    /// Starts a server, runs `body` with it, and awaits its shutdown whether `body` returns or
    /// throws, so a test ends only once its server is gone (a `defer { Task { … } }` never waits).
    static func with(
        state: ModelHost.State? = nil, metrics: Metrics = Metrics(), responses: (any ResponseStoring)? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (RunningServer) async throws -> Void
    ) async throws {
        let s = try start(state: state, metrics: metrics, responses: responses, configure: configure)
        do {
            try await body(s)
            await s.server.shutdown()
        } catch {
            await s.server.shutdown()
            throw error
        }
    }

    func cancelledGenerations() -> Double {
        metrics.value("inferd_generations_total", labels: ["finish_reason": "cancelled"]) ?? 0
    }

    /// What the metrics say of the one generation a test cancelled, once it is counted (the app
    /// counts `inferd_generations_total` last, so the other series are complete by then). How
    /// promptly it stopped is `stepsAfterCancel`, counted in engine steps; the wall-clock wait is
    /// only a bound for a loaded machine (5 s was once too short beside every other suite).
    func cancelledGeneration(timeout: Duration = .seconds(30)) async -> (stepsAfterCancel: Int, completionTokens: Int)?
    {
        guard await eventually(timeout: timeout, { cancelledGenerations() == 1 }) else { return nil }
        return (
            Int(metrics.value("inferd_generation_steps_after_cancel_total") ?? -1),
            Int(metrics.value("inferd_completion_tokens_total") ?? -1)
        )
    }
}

/// llama.cpp's greedy reference for the default model (`Tests/Fixtures/reference/greedy.json`).
struct GreedyCase {
    var name: String
    var messages: [ChatMessage]
    var promptIDs: [Int]
    var generatedIDs: [Int]
    var generatedText: String
    var stopType: String

    static func all() throws -> [GreedyCase] {
        let url = TestPaths.referenceRoot.appendingPathComponent("greedy.json")
        guard let data = FileManager.default.contents(atPath: url.path),
            let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let cases = root["cases"] as? [[String: Any]]
        else { throw ClientError(description: "reference file missing or unreadable at \(url.path)") }
        return cases.map { c in
            let messages = (c["messages"] as? [[String: String]] ?? []).map {
                ChatMessage(role: ChatMessage.Role(rawValue: $0["role"] ?? "") ?? .user, content: $0["content"] ?? "")
            }
            return GreedyCase(
                name: c["name"] as? String ?? "", messages: messages, promptIDs: c["prompt_ids"] as? [Int] ?? [],
                generatedIDs: c["generated_ids"] as? [Int] ?? [], generatedText: c["generated_text"] as? String ?? "",
                stopType: c["stop_type"] as? String ?? "")
        }
    }

    static func named(_ name: String) throws -> GreedyCase {
        guard let c = try all().first(where: { $0.name == name }) else {
            throw ClientError(description: "no greedy reference case \(name)")
        }
        return c
    }
}

func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}

/// Keys sorted: a Swift dictionary's order differs between instances with the same contents,
/// and a body's key order can matter (a schema's `properties` order shapes the prompt and the
/// grammar), so two requests built alike must send the same bytes.
func jsonString(_ object: Any) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: object, options: .sortedKeys), as: UTF8.self)
}

/// The `error` object of an error answer: `code`, `message`, `param`, `type`.
struct WireError: Equatable, CustomStringConvertible {
    var status: Int
    var code: String?
    var param: String?
    var message: String

    init(_ r: RawResponse) {
        let e = r.json?["error"] as? [String: Any] ?? [:]
        status = r.status
        code = e["code"] as? String
        param = e["param"] as? String
        message = e["message"] as? String ?? ""
    }

    var description: String { "\(status) \(code ?? "-") param=\(param ?? "-"): \(message)" }
}
