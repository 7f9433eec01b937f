import Engine
import Foundation
import Telemetry
import Timekeeping

/// The latency histograms of one request, labelled by route and priority: time waiting for a
/// place, time to the first token, the time between tokens, and the whole request. Fed from the
/// request's own events (any thread) and its end, so every surface, sessions included, records
/// them the same way. Names and buckets: README, "Metrics".
final class RequestLatency: Sendable {
    private struct State {
        var started: ContinuousClock.Instant?
        var lastSnapshot: ContinuousClock.Instant?
        var lastTokens = 0
        var finished = false
    }

    private let arrival: ContinuousClock.Instant
    private let clock: any TimeSource
    private let firstToken: Histogram
    private let interToken: Histogram
    private let queueWait: Histogram
    private let request: Histogram
    private let state = Locked(State())

    /// `route` names the surface (`generations`, `chat_completions`, `completions`, `sessions`).
    init(
        metrics: Metrics, route: String, priority: GenerationPriority, arrival: ContinuousClock.Instant,
        clock: any TimeSource = .system
    ) {
        self.arrival = arrival
        self.clock = clock
        let labels = ["route": route, "priority": priority.rawValue]
        firstToken = metrics.histogram(
            "inferd_time_to_first_token_seconds",
            help: "From a request's arrival to its first generated token (its first snapshot).", labels: labels)
        interToken = metrics.histogram(
            "inferd_inter_token_latency_seconds",
            help: "Time between consecutive generated tokens of a request (one observation per token).",
            labels: labels)
        queueWait = metrics.histogram(
            "inferd_queue_wait_seconds",
            help: "From a request's arrival until its prompt began to be processed (session and engine queues).",
            labels: labels)
        request = metrics.histogram(
            "inferd_request_duration_seconds",
            help: "From a request's arrival to its end (completed, cancelled or failed).", labels: labels)
    }

    /// For the backend's event callback: never blocks for long.
    func observe(_ event: GenerationEvent) {
        let now = clock.now
        switch event {
        case .queued:
            break
        case .started:
            state.withLock { if $0.started == nil { $0.started = now } }
        case .snapshot(_, let tokens):
            let gap: (seconds: Double, tokens: Int)? = state.withLock { s in
                defer {
                    s.lastSnapshot = now
                    s.lastTokens = tokens
                }
                guard let last = s.lastSnapshot else { return nil }
                return ((now - last).inSeconds, tokens - s.lastTokens)
            }
            if let gap {
                // A snapshot can cover several tokens (text held back until it is whole).
                if gap.tokens > 0 { interToken.observe(gap.seconds / Double(gap.tokens), count: gap.tokens) }
            } else {
                firstToken.observe((now - arrival).inSeconds)
            }
        }
    }

    /// Records the end once; `promptMilliseconds` (from the result's timings) separates the
    /// queue wait from prompt processing in the time to `started`.
    func finish(promptMilliseconds: Double?) {
        let now = clock.now
        let started: ContinuousClock.Instant?? = state.withLock { s in
            if s.finished { return nil }
            s.finished = true
            return .some(s.started)
        }
        guard let started else { return }
        request.observe((now - arrival).inSeconds)
        if let started, let promptMilliseconds {
            queueWait.observe(max(0, (started - arrival).inSeconds - promptMilliseconds / 1000))
        }
    }
}
