import Backend
import Engine
import Foundation
import RemoteBackend
import TestSupport
import Testing

extension RemoteEndToEnd {
    /// The single-flight wrapper over a remote engine: identical deterministic generations share
    /// one upstream request; cancellation keeps each request's contract.
    @Suite(.serialized) struct RemoteSingleFlightTests {
        let helper = FakeUpstreamTests()

        func run(
            _ b: SingleFlightBackend, _ r: BackendRequest, events: FakeUpstreamTests.Events
        ) async -> Result<GenerationResult, GenerationError> {
            do {
                return .success(try await b.generate(r, onEvent: { events.append($0) }))
            } catch {
                return .failure(error)
            }
        }

        @Test func identicalGreedyRequestsShareOneUpstreamRequestUntilTheLastLeaves() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = helper.backend([upstream.url("hold")], idle: 5)
            let flight = SingleFlightBackend(wrapping: b)
            let r = helper.request(b)
            let leaderEvents = FakeUpstreamTests.Events()
            let leader = Task { await run(flight, r, events: leaderEvents) }
            let held = GenerationEvent.snapshot(content: "held", completionTokens: 1)
            #expect(await eventually { leaderEvents.all.contains(held) })
            var joining = r
            joining.label = "joiner"
            let joinerEvents = FakeUpstreamTests.Events()
            let joiner = Task { await run(flight, joining, events: joinerEvents) }
            // Brought up to date at once: the leader's started event and latest snapshot.
            #expect(await eventually { joinerEvents.all.contains(held) })
            guard case .started = joinerEvents.all.first else {
                Issue.record("the joiner was not told the generation started: \(joinerEvents.all)")
                return
            }
            #expect(try upstream.stats().requests == 1)
            #expect(b.activeGenerations == 1)
            #expect(flight.joinedCount == 1 && flight.startedCount == 1)

            // The leader leaves: it ends at once, the shared request goes on for the joiner.
            leader.cancel()
            let first = try await leader.value.get()
            #expect(first.finishReason == .cancelled)
            #expect(first.content == "held")
            #expect(try upstream.stats().open == 1, "the upstream request stopped while a requester remained")

            // The last one leaves: the upstream connection closes.
            joiner.cancel()
            let last = try await joiner.value.get()
            #expect(last.finishReason == .cancelled)
            #expect(last.sharedFrom == "t")
            #expect(await eventually { (try? upstream.stats().open) == 0 })
            #expect(try upstream.stats().requests == 1)
            #expect(b.activeGenerations == 0)
        }

        @Test func sampledRequestsAndRequestsWithADeadlineRunOnTheirOwn() async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = helper.backend([upstream.url("hold")], idle: 5)
            let flight = SingleFlightBackend(wrapping: b)
            var sampling = SamplingOptions()
            sampling.temperature = 0.7
            sampling.seed = nil
            let sampled = helper.request(b, sampling: sampling)
            var timed = helper.request(b)
            timed.deadline = .now + .seconds(30)
            for r in [sampled, timed] {
                let e1 = FakeUpstreamTests.Events()
                let e2 = FakeUpstreamTests.Events()
                let before = try upstream.stats().requests
                let t1 = Task { await run(flight, r, events: e1) }
                let t2 = Task { await run(flight, r, events: e2) }
                #expect(await eventually { !e1.all.isEmpty && !e2.all.isEmpty })
                #expect(await eventually { (try? upstream.stats().requests) == before + 2 })
                t1.cancel()
                t2.cancel()
                _ = await (t1.value, t2.value)
            }
            #expect(b.activeGenerations == 0)
        }
    }
}
