import Engine
import Foundation
import HTTPServer
import InferdServer

/// `inferd bench`: llama-bench-style table of prompt and generation speed, decode's weight
/// bandwidth beside a memory-read probe from the same run, and (`--http`) time to first
/// snapshot over a real socket.
public enum BenchCommand {
    struct Report: Encodable {
        struct Row: Encodable {
            var test: String
            var threads: Int
            var tokensPerSecond: Double
            var stddev: Double
            var median: Double
            var samples: [Double]
            /// Cores other processes used during each sample.
            var othersCores: [Double]
            enum CodingKeys: String, CodingKey {
                case test, threads, stddev, median, samples
                case tokensPerSecond = "tokens_per_second"
                case othersCores = "others_cores"
            }
        }
        var model: String
        /// The C kernels' instruction set (CPUKernels.name).
        var kernels: String
        var modelBytes: Int
        var parameters: Int
        var results: [Row]
        var decodeBandwidthGBps: Double?
        /// The probe at the largest thread count.
        var memoryBandwidthGBps: Double
        /// The probe at each thread count, keyed by it: each decode row is put against its own.
        var memoryBandwidthByThreadsGBps: [String: Double]
        var http: HTTPBench.Result?
        var load: HTTPBench.LoadResult?
        enum CodingKeys: String, CodingKey {
            case model, kernels, parameters, results, http, load
            case modelBytes = "model_bytes"
            case decodeBandwidthGBps = "decode_bandwidth_gbps"
            case memoryBandwidthGBps = "memory_bandwidth_gbps"
            case memoryBandwidthByThreadsGBps = "memory_bandwidth_by_threads_gbps"
        }
    }

    public static func run(arguments: [String]) async -> Int32 {
        let options: CommandOptions
        let threadCounts: [Int]
        let tests: [EngineBenchmark.Test]
        let repetitions: Int
        let loadStreams: Int?
        let httpTokens: Int
        let kvCacheType: KVCacheType
        do {
            options = try CommandOptions(
                arguments,
                known: [
                    "model", "threads", "tests", "prompt-lengths", "repetitions", "load", "http-tokens", "schema",
                    "kv-cache-type", "tools", "tool-format",
                ],
                booleans: ["json", "http", "no-wait"])
            threadCounts = try (options.last("threads") ?? "1,2").split(separator: ",").map {
                guard let t = Int($0), t >= 1 else { throw ConfigurationError("--threads takes a list like 1,2") }
                return t
            }
            // --prompt-lengths 128,512,2048,4096: the prefill curve, one ppN per length (after
            // --tests when both are given; alone, instead of the default tests).
            let lengths = try (options.last("prompt-lengths")?.split(separator: ",") ?? []).map {
                guard let n = Int($0), n >= 1 else {
                    throw ConfigurationError("--prompt-lengths takes a list of token counts like 128,512,2048,4096")
                }
                return EngineBenchmark.Test.prompt(n)
            }
            let testList = options.last("tests") ?? (lengths.isEmpty ? "pp512,pp64,tg128" : "none")
            let listed = testList == "none" ? [] : try testList.split(separator: ",").map(parseTest)
            tests = listed + lengths.filter { !listed.contains($0) }
            repetitions = try options.int("repetitions") ?? 5
            guard repetitions >= 1 else { throw ConfigurationError("--repetitions must be at least 1") }
            loadStreams = try options.int("load")
            guard (loadStreams ?? 1) >= 1 else {
                throw ConfigurationError("--load takes a number of streams, at least 1")
            }
            httpTokens = try options.int("http-tokens") ?? 128
            guard httpTokens >= 2 else { throw ConfigurationError("--http-tokens must be at least 2") }
            let kvName = options.last("kv-cache-type") ?? KVCacheType.f16.rawValue
            guard let kv = KVCacheType(rawValue: kvName) else {
                throw ConfigurationError(
                    "--kv-cache-type takes \(KVCacheType.allCases.map(\.rawValue).joined(separator: " or ")), not \(kvName)"
                )
            }
            kvCacheType = kv
        } catch let error as ConfigurationError {
            return InferdCLI.fail(error.description, code: 2)
        } catch {
            return InferdCLI.fail("\(error)", code: 2)
        }
        let path = options.last("model") ?? ServerConfiguration().model
        let json = options.flags.contains("json")
        if let tools = options.last("tools") {
            let counts = tools.split(separator: ",").compactMap { Int($0) }.filter { $0 >= 1 }
            guard !counts.isEmpty else {
                return InferdCLI.fail("--tools takes a list of tool counts like 1,8,32", code: 2)
            }
            do {
                try ToolBench.run(
                    modelPath: path, counts: counts, formatName: options.last("tool-format"),
                    threads: threadCounts.last ?? 2)
                return 0
            } catch {
                return InferdCLI.fail("\(error)", code: 1)
            }
        }
        if let schema = options.last("schema") {
            do {
                try await StructuredBench.run(
                    modelPath: path, schemaPath: schema, threads: threadCounts, tokens: min(httpTokens, 96))
                return 0
            } catch {
                return InferdCLI.fail("\(error)", code: 1)
            }
        }
        do {
            let file = try GGUFFile(path: path)
            let name = file.optionalString("general.name") ?? URL(fileURLWithPath: path).lastPathComponent
            let weightBytes = file.tensors.values.reduce(0) { $0 + $1.byteCount }
            let parameters = file.tensors.values.reduce(0) { $0 + $1.elementCount }
            var rows: [Report.Row] = []
            var bestDecode: (tokensPerSecond: Double, threads: Int)?
            // What one decoding token reads (a mixture of experts reads its chosen experts only),
            // which the bandwidth lines put against the probe; the table's size is the file's.
            var activeBytes = weightBytes
            // What t threads can read, probed right after t threads' samples: one core's decode
            // is put against one core's reads, two against two (the scaling question).
            var probes: [Int: Double] = [:]
            if !json && !tests.isEmpty { printHeader() }
            for t in threadCounts {
                let model = try LlamaModel(gguf: file, threads: t, kvCacheType: kvCacheType)
                activeBytes = model.activeWeightBytesPerToken
                for test in tests {
                    let r = try EngineBenchmark.measure(
                        model: model, test: test, repetitions: repetitions,
                        waitForQuiet: !options.flags.contains("no-wait"))
                    rows.append(
                        .init(
                            test: "\(test)", threads: t, tokensPerSecond: r.mean, stddev: r.standardDeviation,
                            median: r.median, samples: r.samples, othersCores: r.othersCores))
                    if !json {
                        printRow(name: name, bytes: weightBytes, parameters: parameters, threads: t, result: r)
                    }
                    if case .generation = test, r.median > (bestDecode?.tokensPerSecond ?? 0) {
                        bestDecode = (r.median, t)
                    }
                }
                probes[t] = EngineBenchmark.memoryBandwidth(threads: t)
            }
            let maxThreads = threadCounts.max() ?? 1
            let memory = probes[maxThreads] ?? EngineBenchmark.memoryBandwidth(threads: maxThreads)
            let decodeGBps = bestDecode.map { $0.tokensPerSecond * Double(activeBytes) / 1e9 }
            var http: HTTPBench.Result?
            if options.flags.contains("http") {
                http = try await HTTPBench.run(
                    modelPath: path, threads: threadCounts.max() ?? 1, tokens: httpTokens, kvCacheType: kvCacheType)
            }
            var load: HTTPBench.LoadResult?
            if let streams = loadStreams {
                load = try await HTTPBench.load(
                    modelPath: path, threads: threadCounts.max() ?? 1, streams: streams, tokens: httpTokens,
                    kvCacheType: kvCacheType)
            }
            if json {
                let report = Report(
                    model: name, kernels: CPUKernels.name, modelBytes: file.fileSize, parameters: parameters,
                    results: rows,
                    decodeBandwidthGBps: decodeGBps, memoryBandwidthGBps: memory,
                    memoryBandwidthByThreadsGBps: Dictionary(
                        uniqueKeysWithValues: probes.map { ("\($0.key)", $0.value) }),
                    http: http, load: load)
                print(WireJSON.string(report))
            } else {
                print("")
                print("kernels: \(CPUKernels.name)")
                print(
                    "memory read bandwidth (probe): "
                        + probes.keys.sorted().map { t in
                            String(format: "%d thread%@ %.1f GB/s", t, t == 1 ? "" : "s", probes[t]!)
                        }.joined(separator: ", "))
                for line in summaryLines(rows: rows, tests: tests, weightBytes: activeBytes, probes: probes) {
                    print(line)
                }
                if let d = decodeGBps, let best = bestDecode {
                    let probe = probes[best.threads] ?? memory
                    print(
                        String(
                            format:
                                "decode weight bandwidth (tg median %.1f tok/s at %d threads x %.1f MB/token): %.1f GB/s = %.0f%% of the probe at %d threads",
                            best.tokensPerSecond, best.threads, Double(activeBytes) / 1e6, d, d / probe * 100,
                            best.threads))
                }
                if let l = load {
                    print(
                        String(
                            format:
                                "load: %d streams x %d tokens: aggregate %.1f tok/s = %.2fx one stream alone (%.1f tok/s); first snapshot median %.0f ms, max %.0f ms (idle: %.0f ms)",
                            l.streams, l.tokensPerStream, l.aggregateTokensPerSecond,
                            l.aggregateTokensPerSecond / l.singleStreamTokensPerSecond, l.singleStreamTokensPerSecond,
                            l.timeToFirstSnapshotMedianMs, l.timeToFirstSnapshotMaxMs, l.idleTimeToFirstSnapshotMs))
                    print(
                        String(
                            format:
                                "load: a stream arriving while %d others decode: first snapshot %.0f ms = %.2fx idle",
                            l.streams - 1, l.arrivalTimeToFirstSnapshotMs,
                            l.arrivalTimeToFirstSnapshotMs / max(l.idleTimeToFirstSnapshotMs, 1e-9)))
                    print(
                        String(
                            format: "load: resident memory %.1f MiB idle, %.1f MiB at most while %d streams ran",
                            Double(l.residentBytesIdle) / 1_048_576, Double(l.residentBytesPeak) / 1_048_576,
                            l.streams))
                }
                if let h = http {
                    print(
                        String(
                            format:
                                "http: prompt %d tokens, time to first snapshot %.1f ms, %d tokens at %.1f tok/s as seen by the client",
                            h.promptTokens, h.timeToFirstSnapshotMs, h.completionTokens, h.clientTokensPerSecond))
                }
            }
            return 0
        } catch {
            return InferdCLI.fail("\(error)")
        }
    }

    static func parseTest(_ s: Substring) throws -> EngineBenchmark.Test {
        if s.hasPrefix("pp"), let n = Int(s.dropFirst(2)), n > 0 { return .prompt(n) }
        if s.hasPrefix("tg"), let n = Int(s.dropFirst(2)), n > 0 { return .generation(n) }
        let depth = s.dropFirst(2).split(separator: "@")
        if s.hasPrefix("tg"), depth.count == 2, let n = Int(depth[0]), let d = Int(depth[1]), n > 0, d > 0 {
            return .generationAtDepth(n, depth: d)
        }
        let parts = s.dropFirst(2).split(separator: "x")
        if s.hasPrefix("tg"), parts.count == 2, let n = Int(parts[0]), let streams = Int(parts[1]), n > 0,
            (1...LlamaModel.maxSequencesPerBatch).contains(streams)
        {
            return .batchedGeneration(n, sequences: streams)
        }
        throw ConfigurationError(
            "unknown test \(s): use ppN, tgN, tgN@D (after a D-token context) or tgNxS (S sequences together, 1-\(LlamaModel.maxSequencesPerBatch)), e.g. pp512,tg128,tg128@2048,tg128x8"
        )
    }

    static func printHeader() {
        // "others": the most cores other processes used during any sample (a busy machine's
        // figures are not the engine's).
        print(
            "| model                          |       size |     params | threads |     test |              t/s | others |"
        )
        print(
            "| ------------------------------ | ---------: | ---------: | ------: | -------: | ---------------: | -----: |"
        )
    }

    static func printRow(name: String, bytes: Int, parameters: Int, threads: Int, result: EngineBenchmark.Result) {
        let size = String(format: "%.2f MiB", Double(bytes) / 1_048_576)
        let params = String(format: "%.2f M", Double(parameters) / 1e6)
        let speed = String(format: "%.2f ± %.2f", result.mean, result.standardDeviation)
        let others = result.othersCores.max().map { String(format: "%.2f", $0) } ?? "-"
        print(
            "| \(pad(String(name.prefix(30)), 30, left: true)) | \(pad(size, 10)) | \(pad(params, 10)) | "
                + "\(pad("\(threads)", 7)) | \(pad("\(result.test)", 8)) | \(pad(speed, 16)) | \(pad(others, 6)) |")
    }

    static func pad(_ s: String, _ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - s.count))
        return left ? s + fill : fill + s
    }
}
