import Backend
import Engine
import Foundation
import RemoteBackend
import Telemetry
import TestSupport
import Testing

extension RemoteEndToEnd {
    /// A submitted generation goes to the upstream at once, before anyone awaits it (the proxy's
    /// time to first token), and awaiting it keeps its meaning: the result, and cancellation.
    @Suite(.serialized) struct EarlyStartTests {
        static let logger = Logger(label: "test", minimumLevel: .error, sink: LogSink { _ in })

        func backend(_ url: String) -> OpenAIRemoteBackend {
            var transfer = TransferOptions()
            transfer.connectTimeout = .seconds(1)
            transfer.idleTimeout = .seconds(5)
            let settings = UpstreamSettings(
                baseURLs: [url], model: "fake", transfer: transfer, contextLength: 2048, maxActivePerUpstream: 4)
            return OpenAIRemoteBackend(settings: settings, modelName: "fake", contextLength: 2048, logger: Self.logger)
        }

        func request(_ b: OpenAIRemoteBackend) -> BackendRequest {
            let messages = [ChatMessage(role: .user, content: "Hi")]
            let prompt = b.prepare(.conversation(instructions: nil, messages: messages))
            return BackendRequest(prompt: prompt, maxTokens: 16, sampling: .greedy, stop: [], label: "t")
        }

        /// The backend itself, or the single-flight wrapper over it.
        static func submitter(_ b: OpenAIRemoteBackend, sharing: Bool) -> any GenerationBackend {
            sharing ? SingleFlightBackend(wrapping: b) : b
        }

        /// Both paths: a request of its own, and a greedy one that may share (single-flight).
        @Test(arguments: [false, true])
        func theUpstreamRequestLeavesAtSubmitNotWhenAwaited(sharing: Bool) async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend(upstream.url("ok"))
            let pending = try Self.submitter(b, sharing: sharing).submit(request(b)) { _ in }
            let sent = await eventually(timeout: .seconds(3)) { (try? upstream.stats().requests) == 1 }
            #expect(sent, "the upstream had no request while the generation was not awaited yet")
            let result = try await pending.result()
            #expect(result.content == "one two three four five")
            #expect(result.finishReason == .stop)
            #expect(b.activeGenerations == 0)
        }

        @Test(arguments: [false, true])
        func cancellingTheAwaitingTaskStillClosesTheUpstreamConnection(sharing: Bool) async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend(upstream.url("hold"))
            let pending = try Self.submitter(b, sharing: sharing).submit(request(b)) { _ in }
            #expect(await eventually { (try? upstream.stats().open) == 1 })
            let task = Task { try await pending.result() }
            try await Task.sleep(for: .milliseconds(50))
            task.cancel()
            let result = try await task.value
            #expect(result.finishReason == .cancelled)
            #expect(await eventually { (try? upstream.stats().open) == 0 }, "the upstream connection stayed open")
            #expect(b.activeGenerations == 0)
        }

        /// A requester that fails before awaiting drops its pending generation: the upstream
        /// request started at submit must not run on for nobody.
        @Test(arguments: [false, true])
        func aPendingGenerationDroppedUnawaitedClosesTheUpstreamConnection(sharing: Bool) async throws {
            let upstream = try FakeUpstream()
            defer { upstream.stop() }
            let b = backend(upstream.url("hold"))
            var pending: PendingGeneration? = try Self.submitter(b, sharing: sharing).submit(request(b)) { _ in }
            #expect(pending != nil)
            #expect(await eventually { (try? upstream.stats().open) == 1 })
            pending = nil
            #expect(await eventually { (try? upstream.stats().open) == 0 }, "the upstream connection stayed open")
            #expect(await eventually { b.activeGenerations == 0 })
        }
    }
}
