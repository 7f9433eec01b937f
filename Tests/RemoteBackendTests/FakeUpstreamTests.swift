import Backend
import Engine
import Foundation
import Telemetry
import TestSupport
import Testing

@testable import RemoteBackend

extension RemoteEndToEnd {
    /// The remote backend against a scripted upstream: each fault gives the expected result or typed
    /// error, and no connection, thread or place is left behind.
    @Suite(.serialized) struct FakeUpstreamTests {
        final class Events: @unchecked Sendable {
            private let lock = NSLock()
            private var list: [GenerationEvent] = []
            func append(_ e: GenerationEvent) { lock.withLock { list.append(e) } }
            var all: [GenerationEvent] { lock.withLock { list } }
        }

        static let logger = Logger(label: "test", minimumLevel: .error, sink: LogSink { _ in })

        func backend(
            _ urls: [String], firstByte: Double = 2, idle: Double = 1, maxLine: Int = 64 << 10, maxActive: Int = 4
        ) -> OpenAIRemoteBackend {
            var transfer = TransferOptions()
            transfer.connectTimeout = .seconds(1)
            transfer.firstByteTimeout = .milliseconds(Int(firstByte * 1000))
            transfer.idleTimeout = .milliseconds(Int(idle * 1000))
            transfer.maxLineBytes = maxLine
            let settings = UpstreamSettings(
                baseURLs: urls, model: "fake", transfer: transfer, contextLength: 2048, maxActivePerUpstream: maxActive)
            return OpenAIRemoteBackend(settings: settings, modelName: "fake", contextLength: 2048, logger: Self.logger)
        }

        func request(_ b: OpenAIRemoteBackend, stop: [String] = [], sampling: SamplingOptions = .greedy)
            -> BackendRequest
        {
            let prompt = b.prepare(
                .conversation(instructions: "Be brief.", messages: [ChatMessage(role: .user, content: "Hello there")]))
            return BackendRequest(prompt: prompt, maxTokens: 16, sampling: sampling, stop: stop, label: "t")
        }

        /// Runs one generation; the error when it threw.
        func run(_ b: OpenAIRemoteBackend, _ r: BackendRequest, events: Events = Events()) async -> Result<
            GenerationResult, GenerationError
        > {
            do {
                return .success(try await b.generate(r, onEvent: { events.append($0) }))
            } catch {
                return .failure(error)
            }
        }

        /// TCP sockets this process holds open to `port` on the other end: the connections a
        /// transfer to that upstream opens, and nothing another suite running beside this one opens
        /// (its own servers and clients use other ports). A socket of this process is a
        /// `socket:[inode]` in /proc/self/fd; /proc/net/tcp{,6} gives each inode's remote port.
        static func openSockets(to port: Int) -> Int {
            let inodes = ownSocketInodes()
            return tcpTable().filter { inodes.contains($0.inode) && $0.remotePort == port }.count
        }

        /// Sockets of this process that no TCP table lists: a connection that failed (refused) and
        /// was never closed. Others' sockets only pass through this state between `socket()` and
        /// `connect()`, so a count that stays above its start is a leak.
        static func unlistedSockets() -> Int {
            var listed = Set(tcpTable().map(\.inode))
            for table in ["/proc/net/udp", "/proc/net/udp6", "/proc/net/raw", "/proc/net/raw6"] {
                listed.formUnion(rows(table).compactMap { $0.count > 9 ? String($0[9]) : nil })
            }
            for line in rows("/proc/net/unix") where line.count > 6 { listed.insert(String(line[6])) }
            for line in rows("/proc/net/netlink") where line.count > 9 { listed.insert(String(line[9])) }
            return ownSocketInodes().subtracting(listed).count
        }

        /// The inodes of this process's sockets (`socket:[inode]` in /proc/self/fd).
        static func ownSocketInodes() -> Set<String> {
            let fd = "/proc/self/fd/"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: fd)) ?? []
            return Set(
                names.compactMap { name -> String? in
                    guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: fd + name),
                        link.hasPrefix("socket:[")
                    else { return nil }
                    return String(link.dropFirst("socket:[".count).dropLast())
                })
        }

        /// Every IPv4 and IPv6 TCP socket of the machine: its inode and remote port.
        static func tcpTable() -> [(inode: String, remotePort: Int)] {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            (rows("/proc/net/tcp") + rows("/proc/net/tcp6")).compactMap { fields in
                guard fields.count > 9,
                    let port = fields[2].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
                else { return nil }
                return (String(fields[9]), port)
            }
        }

        /// A /proc/net table's rows (after its header), split into fields.
        static func rows(_ path: String) -> [[Substring]] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").dropFirst().map { $0.split(separator: " ") }
        }

        /// After a generation: no place held, the upstream saw every connection close, no socket kept.
        func expectNothingLeft(_ b: OpenAIRemoteBackend, _ upstream: FakeUpstream, fds: Int) async throws {
            #expect(b.activeGenerations == 0)
            let closed = await eventually(timeout: .seconds(5)) { (try? upstream.stats().open) == 0 }
            #expect(closed, "the upstream still holds a connection")
            let released = await eventually(timeout: .seconds(2)) { Self.openSockets(to: upstream.port) <= fds }
            #expect(released, "sockets leaked: \(fds) before, now \(Self.openSockets(to: upstream.port))")
        }

        @Test func aStreamBecomesStartedThenGrowingSnapshotsAndTheUpstreamsUsage() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("ok")])
            let events = Events()
            let result = try await run(b, request(b), events: events).get()
            #expect(result.content == "one two three four five")
            #expect(result.finishReason == .stop)
            #expect(result.usage == GenerationUsage(promptTokens: 11, completionTokens: 5, cachedTokens: 3))
            let all = events.all
            guard case .started = all.first else {
                Issue.record("first event is not started: \(all)")
                return
            }
            let snapshots = all.compactMap { e -> String? in
                if case .snapshot(let content, _) = e { return content }
                return nil
            }
            #expect(snapshots == ["one", "one two", "one two three", "one two three four", "one two three four five"])
            try await expectNothingLeft(b, upstream, fds: fds)
        }

        /// The upstream's cache is one for all of this server's tenants: its cached_tokens would
        /// show one key another's prompts (#39), so only the one-scope server passes it on.
        @Test func theUpstreamsCachedTokensArePassedOnOnlyWithOneScope() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("ok")])
            for (scope, expected) in [
                (GenerationScope.shared, 3), (GenerationScope(tenant: "alpha"), 0),
                (GenerationScope(cacheSalt: "tab-1"), 0),
            ] {
                var r = request(b)
                r.scope = scope
                let result = try await run(b, r).get()
                #expect(result.usage == GenerationUsage(promptTokens: 11, completionTokens: 5, cachedTokens: expected))
            }
        }

        @Test func theRequestCarriesTheConversationAndOptions() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("echo")])
            var sampling = SamplingOptions()
            sampling.temperature = 0.5
            sampling.topP = 0.9
            sampling.topK = 20
            sampling.minP = 0
            sampling.seed = 42
            let result = try await run(b, request(b, stop: ["END"], sampling: sampling)).get()
            let sent = try #require(try JSONSerialization.jsonObject(with: Data(result.content.utf8)) as? [String: Any])
            #expect(sent["model"] as? String == "fake")
            #expect(sent["stream"] as? Bool == true)
            #expect((sent["stream_options"] as? [String: Any])?["include_usage"] as? Bool == true)
            #expect(sent["max_tokens"] as? Int == 16)
            #expect(sent["seed"] as? Int == 42)
            #expect(sent["top_k"] as? Int == 20)
            #expect(sent["min_p"] == nil)
            #expect(abs((sent["temperature"] as? Double ?? 0) - 0.5) < 1e-6)
            #expect(abs((sent["top_p"] as? Double ?? 0) - 0.9) < 1e-6)
            #expect(sent["stop"] as? [String] == ["END"])
            let messages = try #require(sent["messages"] as? [[String: String]])
            #expect(
                messages == [["role": "system", "content": "Be brief."], ["role": "user", "content": "Hello there"]])
            #expect(result.finishReason == .length)
        }

        @Test func frequencyAndPresencePenaltiesAreSentUnderOpenAINamesEvenGreedy() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("echo")])
            var sampling = SamplingOptions.greedy
            sampling.frequencyPenalty = 0.5
            sampling.presencePenalty = -1.25
            let result = try await run(b, request(b, sampling: sampling)).get()
            let sent = try #require(try JSONSerialization.jsonObject(with: Data(result.content.utf8)) as? [String: Any])
            #expect(sent["frequency_penalty"] as? Double == 0.5)
            #expect(sent["presence_penalty"] as? Double == -1.25)
            #expect(sent["repeat_penalty"] == nil)
            // Zero is OpenAI's default: not sent.
            let plain = try await run(b, request(b, sampling: .greedy)).get()
            let sentPlain = try #require(
                try JSONSerialization.jsonObject(with: Data(plain.content.utf8)) as? [String: Any])
            #expect(sentPlain["frequency_penalty"] == nil && sentPlain["presence_penalty"] == nil)
        }

        @Test func aRepeatPenaltyCannotBeSentAndIsRefusedBeforeSending() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("ok")])
            var sampling = SamplingOptions.greedy
            sampling.repeatPenalty = 1.2
            let result = await run(b, request(b, sampling: sampling))
            guard case .failure(.invalidOption(let name, _)) = result else {
                Issue.record("expected invalidOption, got \(result)")
                return
            }
            #expect(name == "repeat_penalty")
            #expect(try upstream.stats().requests == 0)
        }

        @Test func aRefusedConnectionIsUpstreamUnavailableWithRetryAfter() async throws {
            let fds = Self.unlistedSockets()
            // Port 1 on loopback: nothing listens, the connection is refused at once.
            let b = backend(["http://127.0.0.1:1/v1"])
            let result = await run(b, request(b))
            guard case .failure(.upstreamUnavailable(_, let retryAfter)) = result else {
                Issue.record("expected upstreamUnavailable, got \(result)")
                return
            }
            #expect(retryAfter > 0)
            #expect(b.activeGenerations == 0)
            #expect(await eventually { Self.unlistedSockets() <= fds })
        }

        @Test func aRefusedConnectionTriesTheNextUpstreamOnce() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend(["http://127.0.0.1:1/v1", upstream.url("ok")])
            // Round robin: whichever comes first, both generations are answered by the live one.
            for _ in 0..<2 {
                let result = try await run(b, request(b)).get()
                #expect(result.content == "one two three four five")
            }
            #expect(try upstream.stats().requests == 2)
        }

        @Test func aSlowFirstBytePastTheTimeoutFailsAndClosesTheConnection() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("slow")], firstByte: 0.5)
            let start = ContinuousClock.now
            let result = await run(b, request(b))
            let elapsed = ContinuousClock.now - start
            guard case .failure(.upstreamFailed(let why)) = result else {
                Issue.record("expected upstreamFailed, got \(result)")
                return
            }
            #expect(why.contains("sent nothing"))
            #expect(elapsed < .milliseconds(1500))
            try await expectNothingLeft(b, upstream, fds: fds)
            #expect(try upstream.stats().closed_at.count == 1)
        }

        @Test func anUpstreamThatDiesMidStreamIsAFailureAfterItsSnapshots() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("die")])
            let events = Events()
            let result = await run(b, request(b), events: events)
            guard case .failure(.upstreamFailed(let why)) = result else {
                Issue.record("expected upstreamFailed, got \(result)")
                return
            }
            #expect(why.contains("before it finished"))
            #expect(events.all.last == .snapshot(content: "abc", completionTokens: 3))
            #expect(try upstream.stats().requests == 1, "a failure mid-stream must not be retried")
            try await expectNothingLeft(b, upstream, fds: fds)
        }

        @Test func a429IsUpstreamUnavailableWithTheUpstreamsRetryAfter() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("busy")])
            let result = await run(b, request(b))
            guard case .failure(.upstreamUnavailable(let why, let retryAfter)) = result else {
                Issue.record("expected upstreamUnavailable, got \(result)")
                return
            }
            #expect(retryAfter == 7)
            #expect(why.contains("429"))
            let b503 = backend([upstream.url("unavailable")])
            guard case .failure(.upstreamUnavailable(_, 4)) = await run(b503, request(b503)) else {
                Issue.record("503 with Retry-After: 4 was not passed on")
                return
            }
        }

        @Test func a4xxKeepsItsMeaningAndTheUpstreamsMessage() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("reject")])
            let result = await run(b, request(b))
            #expect(
                result.failure
                    == .upstreamRejected(
                        .invalidRequest, message: "it answered 400: the upstream does not like this request"))
        }

        @Test func eachRefusalStatusHasItsMeaning() {
            let meanings = [400, 401, 403, 404, 405, 407, 409, 413, 422].map(OpenAIRemoteBackend.rejection(for:))
            #expect(
                meanings == [
                    .invalidRequest, .credentials, .credentials, .notFound, .invalidRequest, .credentials,
                    .invalidRequest, .tooLarge, .unprocessable,
                ])
        }

        @Test func aMalformedEventIsAClearFailure() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("malformed")])
            let result = await run(b, request(b))
            guard case .failure(.upstreamFailed(let why)) = result else {
                Issue.record("expected upstreamFailed, got \(result)")
                return
            }
            #expect(why.contains("not a JSON object"))
            try await expectNothingLeft(b, upstream, fds: fds)
        }

        @Test func aNeverEndingLineStopsAtTheLineBound() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("endless")], maxLine: 64 << 10)
            let result = await run(b, request(b))
            guard case .failure(.upstreamFailed(let why)) = result else {
                Issue.record("expected upstreamFailed, got \(result)")
                return
            }
            #expect(why.contains("longer than 65536 bytes"))
            try await expectNothingLeft(b, upstream, fds: fds)
        }

        @Test func aStallPastTheIdleTimeoutFailsAndClosesTheConnection() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("stall")], idle: 0.4)
            let start = ContinuousClock.now
            let result = await run(b, request(b))
            guard case .failure(.upstreamFailed(let why)) = result else {
                Issue.record("expected upstreamFailed, got \(result)")
                return
            }
            #expect(why.contains("stalled"))
            #expect(ContinuousClock.now - start < .milliseconds(1500))
            try await expectNothingLeft(b, upstream, fds: fds)
        }

        @Test func cancellingTheTaskClosesTheUpstreamConnectionAtOnce() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let fds = Self.openSockets(to: upstream.port)
            let b = backend([upstream.url("hold")], idle: 5)
            let events = Events()
            let r = request(b)
            let task = Task { await run(b, r, events: events) }
            #expect(await eventually { events.all.contains(.snapshot(content: "held", completionTokens: 1)) })
            let cancelledAt = Date().timeIntervalSince1970
            task.cancel()
            let result = try await task.value.get()
            #expect(result.finishReason == .cancelled)
            #expect(result.content == "held")
            try await expectNothingLeft(b, upstream, fds: fds)
            let closedAt = try #require(try upstream.stats().closed_at.first)
            // The upstream polls every 5 ms; 50 ms is the bound the issue sets.
            #expect(
                closedAt - cancelledAt < 0.05, "upstream saw the close \(Int((closedAt - cancelledAt) * 1000)) ms late")
        }

        @Test func shutdownCancelsRunningTransfersAndRefusesNewOnes() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("hold")], idle: 5)
            let events = Events()
            let r = request(b)
            let task = Task { await run(b, r, events: events) }
            #expect(await eventually { !events.all.isEmpty })
            b.shutdown()
            let result = try await task.value.get()
            #expect(result.finishReason == .cancelled)
            #expect(await run(b, r).failure == .shuttingDown)
        }

        @Test func placesBeyondMaxActiveAreRefusedAsBusy() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("hold")], idle: 5, maxActive: 1)
            let r = request(b)
            let task = Task { await run(b, r) }
            #expect(await eventually { b.activeGenerations == 1 })
            guard case .failure(.serverBusy) = await run(b, r) else {
                Issue.record("a second generation past max_active_sequences was not refused")
                task.cancel()
                return
            }
            task.cancel()
            _ = await task.value
            #expect(b.activeGenerations == 0)
        }

        @Test func promptLengthsAreTheDocumentedEstimate() {
            let b = backend(["http://127.0.0.1:1/v1"])
            // 11 bytes of text: 6 tokens by bytes / 2, plus 8 for each of the two messages.
            let conversation = b.prepare(
                .conversation(instructions: "Be.", messages: [ChatMessage(role: .user, content: "Hello there")]))
            #expect(conversation.tokenCount == (3 + 11 + 1) / 2 + 2 * 8)
            #expect(conversation.tokens == nil)
            #expect(b.prepare(.tokens([1, 2, 3])).tokenCount == 3)
            #expect(b.kvCache == nil)
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
