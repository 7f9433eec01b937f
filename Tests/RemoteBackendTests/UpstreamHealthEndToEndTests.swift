import Backend
import Engine
import Foundation
import RemoteBackend
import Telemetry
import TestSupport
import Testing

extension RemoteEndToEnd {
    /// Health checks against scripted upstreams that go away and come back, and the queue in front
    /// of the upstreams.
    @Suite(.serialized) struct UpstreamHealthEndToEndTests {
        static let logger = Logger(label: "test", minimumLevel: .error, sink: LogSink { _ in })

        func backend(
            _ urls: [String], maxActive: Int = 4, maxQueue: Int = 0, metrics: Metrics = Metrics(),
            health: HealthCheckPolicy = HealthCheckPolicy(
                interval: .milliseconds(100), downAfter: 2, upAfter: 1, timeout: .milliseconds(500))
        ) -> OpenAIRemoteBackend {
            var transfer = TransferOptions()
            transfer.connectTimeout = .seconds(1)
            transfer.firstByteTimeout = .seconds(2)
            transfer.idleTimeout = .seconds(5)
            let settings = UpstreamSettings(
                baseURLs: urls, model: "fake", transfer: transfer, contextLength: 2048, maxActivePerUpstream: maxActive,
                maxQueue: maxQueue, health: health)
            return OpenAIRemoteBackend(
                settings: settings, modelName: "fake", contextLength: 2048, logger: Self.logger, metrics: metrics)
        }

        func request(_ b: OpenAIRemoteBackend) -> BackendRequest {
            let prompt = b.prepare(
                .conversation(instructions: nil, messages: [ChatMessage(role: .user, content: "Hi")]))
            return BackendRequest(prompt: prompt, maxTokens: 16, sampling: .greedy, label: "t")
        }

        func run(
            _ b: OpenAIRemoteBackend, _ r: BackendRequest, events: FakeUpstreamTests.Events = .init()
        ) async -> Result<GenerationResult, GenerationError> {
            do {
                return .success(try await b.generate(r, onEvent: { events.append($0) }))
            } catch {
                return .failure(error)
            }
        }

        @Test func anUpstreamThatGoesAwayIsMarkedDownGetsNothingAndComesBack() async throws {
            var a = try FakeUpstream()
            let portA = a.port
            let b2 = try FakeUpstream()
            defer {
                a.stop()
                b2.stop()
            }
            let metrics = Metrics()
            let b = backend([a.url("ok"), b2.url("ok")], metrics: metrics)
            b.startHealthChecks()
            defer { b.shutdown() }
            let labelA = ["upstream": a.url("ok")]
            #expect(b.upstreamStatuses.map(\.status) == ["up", "up"])
            #expect(metrics.value("inferd_upstream_up", labels: labelA) == 1)

            a.stop()
            let down = await eventually(timeout: .seconds(5)) { b.upstreamStatuses.first?.status == "down" }
            #expect(down, "the stopped upstream was not marked down: \(b.upstreamStatuses)")
            #expect(metrics.value("inferd_upstream_up", labels: labelA) == 0)
            #expect(b.upstreamStatuses.last?.status == "up")
            // Every new generation goes to the one that is up, without a failed attempt first.
            let before = try b2.stats().requests
            for _ in 0..<4 { #expect(try await run(b, request(b)).get().content == "one two three four five") }
            #expect(try b2.stats().requests == before + 4)
            #expect(
                metrics.value(
                    "inferd_upstream_requests_total", labels: ["upstream": a.url("ok"), "outcome": "unreachable"])
                    == nil)

            a = try FakeUpstream(port: portA)
            let up = await eventually(timeout: .seconds(5)) { b.upstreamStatuses.first?.status == "up" }
            #expect(up, "the upstream that came back was not marked up: \(b.upstreamStatuses)")
            #expect(metrics.value("inferd_upstream_up", labels: labelA) == 1)
            #expect(
                (metrics.value(
                    "inferd_upstream_health_checks_total", labels: labelA.merging(["result": "failed"]) { $1 })
                    ?? 0) >= 2)
        }

        @Test func allUpstreamsDownIsUnavailableAtOnceWithRetryAfter() async throws {
            let a = try FakeUpstream()
            let b = backend([a.url("ok")])
            b.startHealthChecks()
            defer { b.shutdown() }
            a.stop()
            #expect(await eventually(timeout: .seconds(5)) { b.upstreamStatuses.first?.status == "down" })
            let start = ContinuousClock.now
            let outcome = await run(b, request(b))
            #expect(ContinuousClock.now - start < .milliseconds(50), "refusal waited: \(ContinuousClock.now - start)")
            guard case .failure(.upstreamUnavailable(_, let retryAfter)) = outcome else {
                Issue.record("not upstream_unavailable: \(outcome)")
                return
            }
            #expect(retryAfter >= 1)
            #expect(throws: GenerationError.self) { try b.checkCapacity() }
            #expect(b.activeGenerations == 0)
        }

        @Test func generationsPastMaxActiveQueueThenRunAndAFullQueueIsRefused() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("hold")], maxActive: 1, maxQueue: 1)
            let firstEvents = FakeUpstreamTests.Events()
            let first = Task { await run(b, request(b), events: firstEvents) }
            #expect(await eventually { !firstEvents.all.isEmpty })
            let secondEvents = FakeUpstreamTests.Events()
            let second = Task { await run(b, request(b), events: secondEvents) }
            #expect(await eventually { secondEvents.all.first == .queued(position: 1) })
            #expect(b.activeGenerations == 2)
            #expect(try upstream.stats().requests == 1, "a queued generation reached the upstream")
            guard case .failure(.serverBusy(let length, let retryAfter)) = await run(b, request(b)) else {
                Issue.record("a generation past the full queue was not refused as busy")
                first.cancel()
                second.cancel()
                return
            }
            #expect(length == 1)
            #expect(retryAfter >= 1)
            first.cancel()
            #expect(try await first.value.get().finishReason == .cancelled)
            // The freed place goes to the waiter, which now streams from the upstream.
            #expect(await eventually { secondEvents.all.contains(.snapshot(content: "held", completionTokens: 1)) })
            second.cancel()
            #expect(try await second.value.get().content == "held")
            #expect(b.activeGenerations == 0)
        }

        @Test func aWaiterCancelledInTheQueueEndsAtOnceAndSendsNothing() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("hold")], maxActive: 1, maxQueue: 4)
            let firstEvents = FakeUpstreamTests.Events()
            let first = Task { await run(b, request(b), events: firstEvents) }
            #expect(await eventually { !firstEvents.all.isEmpty })
            let waiterEvents = FakeUpstreamTests.Events()
            let waiter = Task { await run(b, request(b), events: waiterEvents) }
            #expect(await eventually { waiterEvents.all.first == .queued(position: 1) })
            waiter.cancel()
            let result = try await waiter.value.get()
            #expect(result.finishReason == .cancelled)
            #expect(result.content.isEmpty)
            #expect(b.activeGenerations == 1)
            first.cancel()
            _ = await first.value
            #expect(try upstream.stats().requests == 1)
            #expect(b.activeGenerations == 0)
        }

        @Test func aWaiterPastItsDeadlineIsAQueueTimeout() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend([upstream.url("hold")], maxActive: 1, maxQueue: 4)
            let firstEvents = FakeUpstreamTests.Events()
            let first = Task { await run(b, request(b), events: firstEvents) }
            #expect(await eventually { !firstEvents.all.isEmpty })
            var r = request(b)
            r.deadline = .now + .milliseconds(200)
            #expect(await run(b, r).failure == .queueTimeout)
            first.cancel()
            _ = await first.value
            #expect(b.activeGenerations == 0)
        }
    }
}
