import Engine
import HTTPServer
import Telemetry

/// A text completion's echoed prompt in a stream: one chunk with the prompt's text and, with
/// log-probabilities, its tokens' entries, sent once (from the first event after the prompt has
/// run, or at the end when no event came), before any of the answer's chunks.
final class EchoOnce: Sendable {
    private let chunk: OpenAIStreamChunk
    private let recorder: LogprobRecorder?
    private let stream: EventStream
    private let sent = Locked(false)

    init(text: String, template: OpenAIStreamChunk, recorder: LogprobRecorder?, stream: EventStream) {
        var chunk = template
        chunk.content = text
        self.chunk = chunk
        self.recorder = recorder
        self.stream = stream
    }

    func send() {
        let first = sent.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        var chunk = chunk
        if let recorder {
            chunk.logprobs = []
            chunk.promptLogprobs = recorder.prompt
        }
        stream.send(data: WireJSON.string(chunk))
    }
}
