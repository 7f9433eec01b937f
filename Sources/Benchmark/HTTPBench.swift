import Backend
import Engine
import Foundation
import HTTPServer
import InferdServer
import Telemetry

/// `inferd bench --http`: starts the server in-process on a free port, streams one
/// `/v1/generations` request with a ~60-token prompt over a real socket, and measures what a
/// client sees: time to the first `snapshot` event and tokens per second.
enum HTTPBench {
    struct Result: Encodable {
        var promptTokens: Int
        var completionTokens: Int
        var timeToFirstSnapshotMs: Double
        var clientTokensPerSecond: Double
        enum CodingKeys: String, CodingKey {
            case promptTokens = "prompt_tokens"
            case completionTokens = "completion_tokens"
            case timeToFirstSnapshotMs = "time_to_first_snapshot_ms"
            case clientTokensPerSecond = "client_tokens_per_second"
        }
    }

    static let prompt =
        "Summarize in two sentences why cooperative cancellation matters for a server that streams tokens to many clients at once, and what goes wrong without it."

    /// One stream over HTTP on an otherwise idle server.
    static func run(
        modelPath: String, threads: Int, tokens: Int = 128, kvCacheType: KVCacheType = .f16
    ) async throws -> Result {
        try await withServer(modelPath: modelPath, threads: threads, kvCacheType: kvCacheType) { port in
            try await Task.detachedOffPool { try measure(port: port, body: requestBody(maxTokens: tokens)) }
        }
    }

    struct LoadResult: Encodable {
        var streams: Int
        var tokensPerStream: Int
        var aggregateTokensPerSecond: Double
        var singleStreamTokensPerSecond: Double
        var timeToFirstSnapshotMedianMs: Double
        var timeToFirstSnapshotMaxMs: Double
        var idleTimeToFirstSnapshotMs: Double
        /// One more stream's time to first snapshot, sent while `streams - 1` others decode.
        var arrivalTimeToFirstSnapshotMs: Double
        /// The process's resident memory (the server runs in it) after the one-stream warm-up,
        /// and the most it reached while the concurrent streams ran (sampled every 5 ms).
        var residentBytesIdle: Int
        var residentBytesPeak: Int
        enum CodingKeys: String, CodingKey {
            case streams
            case tokensPerStream = "tokens_per_stream"
            case aggregateTokensPerSecond = "aggregate_tokens_per_second"
            case singleStreamTokensPerSecond = "single_stream_tokens_per_second"
            case timeToFirstSnapshotMedianMs = "time_to_first_snapshot_median_ms"
            case timeToFirstSnapshotMaxMs = "time_to_first_snapshot_max_ms"
            case idleTimeToFirstSnapshotMs = "idle_time_to_first_snapshot_ms"
            case arrivalTimeToFirstSnapshotMs = "arrival_time_to_first_snapshot_ms"
            case residentBytesIdle = "resident_bytes_idle"
            case residentBytesPeak = "resident_bytes_peak"
        }
    }

    /// `streams` concurrent streams of `tokens` tokens each against one in-process server, after
    /// one stream alone for the baseline; aggregate = all completion tokens / wall time. Then the
    /// arrival case: one more stream sent while `streams - 1` others are decoding. Every stream
    /// has its own prompt, so identical requests cannot share one generation.
    static func load(
        modelPath: String, threads: Int, streams: Int, tokens: Int = 128, kvCacheType: KVCacheType = .f16
    ) async throws -> LoadResult {
        precondition(streams >= 1, "the command checks --load")
        return try await withServer(modelPath: modelPath, threads: threads, kvCacheType: kvCacheType) { port in
            let single = try await Task.detachedOffPool {
                try measure(port: port, body: requestBody(maxTokens: tokens, ignoreEOS: true, reader: 0))
            }
            let idleResident = ProcessStats.residentBytes()
            let sampler = ResidentSampler()
            let start = ContinuousClock.now
            let results = try await withThrowingTaskGroup(of: Result.self) { group in
                for i in 0..<streams {
                    let body = requestBody(maxTokens: tokens, ignoreEOS: true, reader: i + 1)
                    group.addTask { try await Task.detachedOffPool { try measure(port: port, body: body) } }
                }
                var all: [Result] = []
                for try await r in group { all.append(r) }
                return all
            }
            let wall = (ContinuousClock.now - start).milliseconds / 1000
            let peakResident = sampler.stop()
            let total = results.reduce(0) { $0 + $1.completionTokens }
            let ttfs = results.map(\.timeToFirstSnapshotMs).sorted()
            let arrival = try await arrivalTimeToFirstSnapshot(port: port, running: streams - 1, tokens: tokens)
            return LoadResult(
                streams: streams, tokensPerStream: tokens, aggregateTokensPerSecond: Double(total) / wall,
                singleStreamTokensPerSecond: Double(single.completionTokens)
                    / ((single.timeToFirstSnapshotMs / 1000) + Double(single.completionTokens - 1)
                        / max(single.clientTokensPerSecond, 1e-9)),
                timeToFirstSnapshotMedianMs: ttfs[ttfs.count / 2], timeToFirstSnapshotMaxMs: ttfs.last ?? 0,
                idleTimeToFirstSnapshotMs: single.timeToFirstSnapshotMs, arrivalTimeToFirstSnapshotMs: arrival,
                residentBytesIdle: idleResident, residentBytesPeak: peakResident)
        }
    }

    /// Starts `running` long streams, waits until each has sent its first snapshot (all are
    /// decoding), then measures one more stream's time to first snapshot.
    static func arrivalTimeToFirstSnapshot(port: Int, running: Int, tokens: Int) async throws -> Double {
        let decoding = DispatchSemaphore(value: 0)
        return try await withThrowingTaskGroup(of: Double?.self) { group in
            for i in 0..<running {
                // Long enough to outlast the measured stream's prompt and first token.
                let body = requestBody(maxTokens: tokens * 4, ignoreEOS: true, reader: 100 + i)
                group.addTask {
                    _ = try await Task.detachedOffPool {
                        try measure(port: port, body: body, onFirstSnapshot: { decoding.signal() })
                    }
                    return nil
                }
            }
            group.addTask {
                try await Task.detachedOffPool {
                    for _ in 0..<running { decoding.wait() }
                    return try measure(port: port, body: requestBody(maxTokens: 8, reader: 999)).timeToFirstSnapshotMs
                }
            }
            var measured = 0.0
            for try await value in group { if let v = value { measured = v } }
            return measured
        }
    }

    /// Runs `body` against a server started in-process on a free port over the model.
    static func withServer<T: Sendable>(
        modelPath: String, threads: Int, kvCacheType: KVCacheType = .f16, _ body: (Int) async throws -> T
    ) async throws -> T {
        var config = ServerConfiguration()
        config.port = 0
        config.model = modelPath
        config.connectionTimeoutSeconds = 600
        // The load streams are identical greedy requests: shared, they would measure one stream.
        config.singleFlight = false
        let logger = Logger(label: "bench", minimumLevel: .warning)
        let host = ModelHost(singleFlight: config.singleFlight)
        host.finish(.ready(try InferenceEngine(path: modelPath, threads: threads, kvCacheType: kvCacheType)))
        defer { host.backend?.shutdown() }
        let app = InferdApp(configuration: config, host: host, logger: logger, metrics: Metrics())
        let server = HTTPServer(
            configuration: try HTTPServer.Configuration(config), router: app.makeRouter(), logger: logger,
            metrics: Metrics())
        try server.start()
        do {
            let result = try await body(server.boundPort)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    /// `reader` varies the prompt's last words (same length in tokens) so that concurrent
    /// streams are different requests.
    static func requestBody(maxTokens: Int, ignoreEOS: Bool = false, reader: Int? = nil) -> String {
        WireJSON.string(
            BenchRequest(
                prompt: reader.map { prompt + " Reader \($0)." } ?? prompt, stream: true,
                options: .greedy(maxTokens: maxTokens, ignoreEos: ignoreEOS)))
    }

    /// A `/v1/generations` request body, with the server's own options type.
    struct BenchRequest: Encodable {
        var prompt: String
        var stream: Bool
        var options: GenerationOptionsBody
    }

    /// Blocking socket work, run off Swift's cooperative pool.
    static func measure(port: Int, body: String, onFirstSnapshot: (() -> Void)? = nil) throws -> Result {
        let start = ContinuousClock.now
        let fd = try LoopbackClient(host: "127.0.0.1", port: port, timeoutSeconds: 120)
            .open("POST", "/v1/generations", json: body)
        defer { close(fd) }
        var received = ""
        var firstSnapshot: ContinuousClock.Instant?
        var buffer = [UInt8](repeating: 0, count: 65536)
        // Connection: close, so the server closes the socket after the terminal event.
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += String(decoding: buffer[0..<n], as: UTF8.self)
            if firstSnapshot == nil && received.contains("event: snapshot") {
                firstSnapshot = .now
                onFirstSnapshot?()
            }
        }
        let end = ContinuousClock.now
        guard let first = firstSnapshot else {
            throw BenchError("no snapshot event received:\n\(received.prefix(500))")
        }
        guard let usageRange = received.range(of: "\"usage\":") else { throw BenchError("no completed event received") }
        let usageText = String(received[usageRange.upperBound...].prefix { $0 != "}" }) + "}"
        struct Usage: Decodable {
            var prompt_tokens: Int
            var completion_tokens: Int
        }
        let usage = try JSONDecoder().decode(Usage.self, from: Data(usageText.utf8))
        let ttfs = (first - start).milliseconds
        let decodeSeconds = (end - first).inSeconds
        return Result(
            promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, timeToFirstSnapshotMs: ttfs,
            clientTokensPerSecond: decodeSeconds > 0 ? Double(max(usage.completion_tokens - 1, 0)) / decodeSeconds : 0)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

extension Task where Failure == Error {
    /// Runs blocking work on a thread of its own and awaits it, keeping the cooperative pool free.
    static func detachedOffPool(_ body: @escaping @Sendable () throws -> Success) async throws -> Success {
        try await withCheckedThrowingContinuation { c in
            let thread = Thread { c.resume(with: Result { try body() }) }
            thread.start()
        }
    }
}
