import Telemetry

/// The admission queue's series on the server's metrics registry.
struct AdmissionMetrics: Sendable {
    let active: Gauge
    let queued: Gauge
    let refusedBusy: Counter
    let timedOutWaiting: Counter
    let timedOutRunning: Counter
    let preemptions: Counter

    init(_ metrics: Metrics) {
        active = metrics.gauge(
            "inferd_active_sequences", help: "Generations the engine is stepping (at most max_active_sequences).")
        queued = metrics.gauge(
            "inferd_queue_length", help: "Generations waiting for a place in the engine (at most max_queue).")
        refusedBusy = metrics.counter(
            "inferd_server_busy_total", help: "Generations refused because max_queue already waited (503 server_busy).")
        let timeouts = "Generations whose timeout_seconds passed, by where they were."
        timedOutWaiting = metrics.counter(
            "inferd_generation_timeouts_total", help: timeouts, labels: ["stage": "queue"])
        timedOutRunning = metrics.counter(
            "inferd_generation_timeouts_total", help: timeouts, labels: ["stage": "running"])
        preemptions = metrics.counter(
            "inferd_preemptions_total", help: "Background generations parked to give their place to interactive ones.")
    }

    func publish<ID>(_ queue: AdmissionQueue<ID>) {
        active.set(Double(queue.runningCount))
        queued.set(Double(queue.waitingCount))
    }
}
