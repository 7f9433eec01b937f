import Backend
import Foundation
import Telemetry

/// Upstream health: periodic `GET {base}/models` checks, the up/down marks they lead to, and
/// what `/health` and `/metrics` show of the upstreams.
extension OpenAIRemoteBackend {
    /// Starts checking the upstreams (see `HealthCheckPolicy`) until `shutdown`. Call once.
    public func startHealthChecks() {
        let task = Task.detached { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let now = ContinuousClock.now
                let (due, wake) = self.health.withLock { h in (h.due(now: now), h.nextWakeUp()) }
                for case .check(let i) in due {
                    Task.detached { [weak self] in
                        guard let self else { return }
                        let ok = await self.check(i)
                        self.apply(self.health.withLock { $0.checked(i, ok: ok, now: .now) })
                    }
                }
                // A check that ends schedules the next one an interval later: waking every
                // tenth of an interval picks it up without a wake-up channel.
                let step = self.settings.health.interval / 10
                let until = min(wake ?? (now + step), now + step)
                try? await Task.sleep(until: max(until, now + .milliseconds(5)), clock: .continuous)
            }
        }
        if !keepChecker(task) { task.cancel() }
    }

    /// One check: a 2xx answer to `GET {base}/models` within the policy's timeout.
    func check(_ i: Int) async -> Bool {
        let policy = settings.health
        var options = settings.transfer
        options.connectTimeout = min(options.connectTimeout, policy.timeout)
        options.firstByteTimeout = policy.timeout
        options.idleTimeout = policy.timeout
        options.deadline = .now + policy.timeout
        let transfer = HTTPTransfer(
            HTTPTransferRequest(
                url: settings.endpoints[i].url + "/models", method: .get,
                headers: settings.headers.filter { !$0.hasPrefix("Accept") }),
            options: options
        ) { _ in true }
        let outcome = await transfer.perform()
        let ok: Bool
        if case .finished(let r) = outcome, (200..<300).contains(r.status) { ok = true } else { ok = false }
        metrics.counter(
            "inferd_upstream_health_checks_total", help: "Health checks of each upstream, by result (ok or failed).",
            labels: ["upstream": settings.endpoints[i].displayURL, "result": ok ? "ok" : "failed"]
        ).increment()
        return ok
    }

    /// A generation's attempt reached upstream `i` or found it unreachable.
    func observe(_ i: Int, reachable: Bool) {
        apply(health.withLock { $0.observed(i, ok: reachable) })
    }

    private func apply(_ actions: [UpstreamHealth.Action]) {
        for action in actions {
            switch action {
            case .check: break
            case .markDown(let i):
                logger.warning("upstream down", ["upstream": settings.endpoints[i].displayURL])
                dispatcher.setUp(i, false)
            case .markUp(let i):
                logger.info("upstream up", ["upstream": settings.endpoints[i].displayURL])
                dispatcher.setUp(i, true)
            }
        }
    }

    public var upstreamStatuses: [UpstreamStatus] {
        dispatcher.upstreams.enumerated().map { i, u in
            UpstreamStatus(
                url: settings.endpoints[i].displayURL, up: u.up, active: u.active, weight: u.weight,
                maxActive: u.maxActive)
        }
    }

    /// Sets `inferd_upstream_up` and `inferd_upstream_active_generations` for every upstream
    /// (the dispatcher calls it inside its lock, see `UpstreamDispatcher.onChange`).
    func publishGauges(_ upstreams: [UpstreamDispatcher.Scheduler.Upstream]) {
        for (i, u) in upstreams.enumerated() {
            let label = ["upstream": settings.endpoints[i].displayURL]
            metrics.gauge(
                "inferd_upstream_up", help: "1 while the health checks find the upstream up, else 0.", labels: label
            )
            .set(u.up ? 1 : 0)
            metrics.gauge(
                "inferd_upstream_active_generations", help: "Generations running on each upstream.", labels: label
            ).set(Double(u.active))
        }
    }
}
