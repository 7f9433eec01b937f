import Backend
import Engine
import Foundation
import HTTPServer

extension InferdApp {
    /// The SSE side of the OpenAI routes, in OpenAI's convention: bare `data:` lines, a role
    /// chunk first (chat), then one chunk per new piece of text, then a chunk with
    /// `finish_reason`, the usage chunk when asked for, then `data: [DONE]`. Every chunk is sent
    /// with `send(data:)`, which never drops or reorders: deltas, unlike snapshots, cannot be
    /// conflated. A failure, a shutdown or a `timeout_seconds` that passes while the request still
    /// waits for a place ends the stream with an `error` object and no `[DONE]`; after a disconnect
    /// nothing more is written. Queue positions are not sent: OpenAI's clients know no such chunk.
    func streamOpenAI(
        _ ticket: PendingGeneration, events: GenerationEventRelay, template: OpenAIStreamChunk, stream: EventStream
    ) async {
        let tracker = OpenAIDeltaTracker()
        if template.kind == .chat {
            var first = template
            first.role = "assistant"
            first.content = ""
            stream.send(data: Self.json(first))
        }
        events.attach { event in
            guard case .snapshot(let content, _) = event, let piece = tracker.delta(for: content) else { return }
            var chunk = template
            chunk.content = piece
            stream.send(data: Self.json(chunk))
        }
        let result: GenerationResult
        do {
            result = try await generations.awaitGeneration(ticket, requestID: stream.requestID)
        } catch {
            stream.send(data: Self.json(OpenAIStreamError(error: OpenAIError(error))))
            return
        }
        if result.finishReason == .cancelled {
            let reason = stream.context.cancellationReason?.rawValue ?? "cancelled"
            let error = OpenAIError(
                status: 503, message: "the request was cancelled (\(reason)) before the answer was complete",
                type: "server_error", code: "cancelled")
            stream.send(data: Self.json(OpenAIStreamError(error: error)))
            return
        }
        // Text held back as a possible stop string is released with the result, not a snapshot.
        if let rest = tracker.delta(for: result.content) {
            var chunk = template
            chunk.content = rest
            stream.send(data: Self.json(chunk))
        }
        var finish = template
        finish.finishReason = result.finishReason.rawValue
        stream.send(data: Self.json(finish))
        if template.includeUsageField {
            var usage = template
            usage.hasChoice = false
            usage.usage = OpenAIUsage(result.usage)
            stream.send(data: Self.json(usage))
        }
        stream.send(data: "[DONE]")
    }
}
