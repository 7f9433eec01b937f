import Foundation
import TestSupport
import Testing

/// The `inferd` binary as a user runs it: a real process, real signals, real output.
@Suite struct CommandLineTests {
    static var binary: String { TestPaths.packageRoot.appendingPathComponent(".build/release/inferd").path }
    static var model: String { SharedModel.path }

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    func run(_ arguments: [String], timeout: Double = 120) async throws -> Output {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw ClientError(description: "no release binary at \(Self.binary): build with make test")
        }
        return try await offPool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.binary)
            p.arguments = arguments
            p.currentDirectoryURL = TestPaths.packageRoot
            let out = Pipe()
            let err = Pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            let errData = err.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return Output(
                status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                stderr: String(decoding: errData, as: UTF8.self))
        }
    }

    @Test func tokenizeTreatsSpecialSpellingsAsTextUnlessAsked() async throws {
        let plain = try await run(["tokenize", "--model", Self.model, "Hi<|im_end|>"])
        #expect(plain.status == 0)
        let ids = try JSONDecoder().decode([Int].self, from: Data(plain.stdout.utf8))
        #expect(!ids.contains(2) && ids.count > 3)
        let special = try await run(["tokenize", "--special", "--model", Self.model, "Hi<|im_end|>"])
        #expect(try JSONDecoder().decode([Int].self, from: Data(special.stdout.utf8)).last == 2)
    }

    @Test func generateAnswersSensibly() async throws {
        let r = try await run([
            "generate", "--model", Self.model, "--temperature", "0", "--max-tokens", "24",
            "What is the capital of Australia?",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Canberra"), "\(r.stdout)")
    }

    /// `tgN@D` decodes after a D-token context; a context past the model's is refused.
    @Test func benchDecodesAtADepth() async throws {
        let r = try await run([
            "bench", "--model", Self.model, "--threads", "1", "--tests", "tg4@40", "--repetitions", "2", "--json",
            "--no-wait", "--kv-cache-type", "q8_0",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        struct Report: Decodable {
            struct Row: Decodable {
                var test: String
                var samples: [Double]
            }
            var results: [Row]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(r.stdout.utf8))
        #expect(report.results.map(\.test) == ["tg4@40"])
        #expect(report.results.first?.samples.count == 2 && report.results[0].samples.allSatisfy { $0 > 0 })
        let deep = try await run(["bench", "--model", Self.model, "--tests", "tg8@9000", "--no-wait"])
        #expect(deep.status != 0 && deep.stderr.contains("tg8@9000 needs 9009 positions"), "\(deep.stderr)")
        let bad = try await run(["bench", "--model", Self.model, "--tests", "tg8@", "--kv-cache-type", "q8_0"])
        #expect(bad.status == 2 && bad.stderr.contains("unknown test"), "\(bad.stderr)")
        let type = try await run(["bench", "--model", Self.model, "--tests", "tg8", "--kv-cache-type", "q4"])
        #expect(type.status == 2 && type.stderr.contains("--kv-cache-type takes f16 or q8_0, not q4"), "\(type.stderr)")
    }

    @Test func benchPrintsOneJSONReportWithEveryTestAndBandwidth() async throws {
        let r = try await run([
            "bench", "--model", Self.model, "--threads", "1,2", "--tests", "pp16,tg8,tg8x3", "--repetitions", "2",
            "--json",
            "--no-wait",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        struct Report: Decodable {
            struct Row: Decodable {
                var test: String
                var threads: Int
                var tokens_per_second: Double
                var stddev: Double
                var samples: [Double]
            }
            var model: String
            var results: [Row]
            var decode_bandwidth_gbps: Double
            var memory_bandwidth_gbps: Double
            var memory_bandwidth_by_threads_gbps: [String: Double]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(r.stdout.utf8))
        #expect(
            report.results.map { "\($0.test)/\($0.threads)" } == [
                "pp16/1", "tg8/1", "tg8x3/1", "pp16/2", "tg8/2", "tg8x3/2",
            ])
        #expect(report.results.allSatisfy { $0.samples.count == 2 && $0.tokens_per_second > 0 })
        #expect(report.memory_bandwidth_gbps > 0.5 && report.decode_bandwidth_gbps > 0.1)
        // One probe per thread count, the largest one's also as memory_bandwidth_gbps.
        let probes = report.memory_bandwidth_by_threads_gbps
        #expect(probes.keys.sorted() == ["1", "2"] && probes.values.allSatisfy { $0 > 0.5 })
        #expect(probes["2"] == report.memory_bandwidth_gbps)
        for test in ["tg0x", "tg8x0", "tg8x17", "tg8x3x2"] {
            let bad = try await run(["bench", "--model", Self.model, "--tests", test])
            #expect(bad.status == 2 && bad.stderr.contains("unknown test"), "\(test): \(bad.stderr)")
        }
    }

    /// `--http` and `--load` start a server in-process and measure over a real socket.
    @Test func benchOverHTTPReportsWhatAClientSees() async throws {
        let r = try await run([
            "bench", "--model", Self.model, "--threads", "1", "--tests", "none", "--json", "--no-wait", "--http",
            "--load", "2", "--http-tokens", "12",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        struct Report: Decodable {
            struct Stream: Decodable {
                var prompt_tokens: Int
                var completion_tokens: Int
                var time_to_first_snapshot_ms: Double
                var client_tokens_per_second: Double
            }
            struct Load: Decodable {
                var streams: Int
                var tokens_per_stream: Int
                var aggregate_tokens_per_second: Double
                var single_stream_tokens_per_second: Double
                var time_to_first_snapshot_median_ms: Double
                var time_to_first_snapshot_max_ms: Double
                var idle_time_to_first_snapshot_ms: Double
                var arrival_time_to_first_snapshot_ms: Double
            }
            var results: [[String: Double]]
            var http: Stream
            var load: Load
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(r.stdout.utf8))
        #expect(report.results.isEmpty)
        // The issue's ~60-token prompt, and at most the tokens asked for.
        #expect((50...70).contains(report.http.prompt_tokens), "\(report.http)")
        #expect((2...12).contains(report.http.completion_tokens), "\(report.http)")
        #expect(report.http.time_to_first_snapshot_ms > 0 && report.http.client_tokens_per_second > 0)
        let load = report.load
        #expect(load.streams == 2 && load.tokens_per_stream == 12)
        #expect(load.aggregate_tokens_per_second > 0 && load.single_stream_tokens_per_second > 0)
        #expect(load.time_to_first_snapshot_median_ms <= load.time_to_first_snapshot_max_ms)
        #expect(load.idle_time_to_first_snapshot_ms > 0 && load.arrival_time_to_first_snapshot_ms > 0)
        for (flag, value) in [("--load", "0"), ("--http-tokens", "1")] {
            let bad = try await run(["bench", "--model", Self.model, "--tests", "none", flag, value])
            #expect(bad.status == 2 && bad.stderr.contains(flag), "\(flag) \(value): \(bad.stderr)")
        }
    }

    @Test func badArgumentsAreClearErrors() async throws {
        let r = try await run(["generate", "--model", Self.model, "--max-tokens", "many", "hi"])
        #expect(r.status == 2 && r.stderr.contains("--max-tokens"), "status \(r.status): \(r.stderr)")
        let missing = try await run(["tokenize", "--model", "/nonexistent.gguf", "hi"])
        #expect(missing.status == 1 && missing.stderr.contains("/nonexistent.gguf"))
        let unknown = try await run(["serve", "--prot", "1"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown flag --prot"))
        let help = try await run(["help"])
        #expect(help.status == 0 && help.stdout.contains("INFERD_DATA_DIR"))
        for command in [["bench", "--help"], ["serve", "--port", "1", "-h"], ["generate", "--help"]] {
            let r = try await run(command)
            #expect(r.status == 0 && r.stdout.contains("tgNxS") && r.stderr.isEmpty, "\(command): \(r.stderr)")
        }
    }

    /// A missing model file is refused before listening; a file that is there but does not load
    /// (the server listens first) stops it with status 1, so a supervisor sees the failure
    /// instead of a server that is up and useless.
    @Test func serveExitsWithStatus1WhenTheModelCannotLoad() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-cli-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = try await run(["serve", "--port", "0", "--data-dir", dir, "--model", "/nonexistent/model.gguf"])
        #expect(missing.status == 1 && missing.stderr.contains("model file not found"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("server listening"))

        let bad = dir + "/not-a-model.gguf"
        try Data("this is not a GGUF file".utf8).write(to: URL(fileURLWithPath: bad))
        let r = try await run(["serve", "--port", "0", "--data-dir", dir, "--model", bad])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("server listening") && r.stderr.contains("model load failed"), "\(r.stderr)")
        #expect(r.stderr.contains("reason=model_load_failed") && r.stderr.contains("shutdown complete"), "\(r.stderr)")
    }

    @Test func serveListensLoadsAndStopsCleanlyOnSIGTERM() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw ClientError(description: "no release binary at \(Self.binary)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["serve", "--port", "0", "--model", Self.model, "--drain-seconds", "1"]
        p.currentDirectoryURL = TestPaths.packageRoot
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let log = LogCapture()
        let reader = Thread {
            let handle = err.fileHandleForReading
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                log.append(String(decoding: data, as: UTF8.self))
            }
        }
        reader.start()
        defer { if p.isRunning { p.terminate() } }
        #expect(await eventually(timeout: .seconds(10)) { !log.matching("server listening").isEmpty })
        let line = try #require(log.matching("server listening").first)
        let portText = line.split(separator: " ").first { $0.hasPrefix("port=") }?.dropFirst(5)
        let port = try #require(portText.flatMap { Int($0.prefix { $0.isNumber }) })
        #expect(port > 0 && port != 8080)
        var healthy = false
        for _ in 0..<100 where !healthy {
            let r = try? await offPool { try TestClient(port: port).request("GET", "/health") }
            healthy = r?.status == 200
            if !healthy { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(healthy)
        let check = try await run(["healthcheck", "--port", "\(port)"])
        #expect(check.status == 0, "\(check.stderr)")
        kill(p.processIdentifier, SIGTERM)
        try await offPool { p.waitUntilExit() }
        #expect(p.terminationStatus == 0)
        #expect(await eventually { !log.matching("shutdown complete").isEmpty })
        let after = try await run(["healthcheck", "--port", "\(port)"])
        #expect(after.status == 1 && after.stderr.contains("unhealthy"))
    }
}
