import CKernels
import Foundation
import Synchronization
import Telemetry
import Timekeeping

/// The engine's own thread: runs generation jobs step by step, round-robin, so compute never
/// blocks Swift's cooperative pool and several requests make progress together.
///
/// Each job is stepped once per turn (one prompt chunk or one token), and cancellation is
/// checked before every step, so a cancelled job stops within one step of its request.
/// Which jobs are stepped is the admission queue's decision (`AdmissionQueue`): at most
/// `maxActiveSequences` at once, the others wait (or are refused when too many wait), and the
/// queue's deadlines, preemptions and admissions are applied between rounds.
final class GenerationWorker: @unchecked Sendable {

    private let predictor: any TokenPredictor
    private let condition = NSCondition()
    /// Jobs given a place at submission that the worker thread has not picked up yet.
    private var incoming: [GenerationJob] = []
    /// Who runs and who waits. Guarded by `condition`, like `jobs` and `incoming`.
    private var admission: AdmissionQueue<ObjectIdentifier>
    /// Every job the admission queue holds (running or waiting), by its id.
    private var jobs: [ObjectIdentifier: GenerationJob] = [:]
    private let metrics: AdmissionMetrics
    /// Decides deadlines, preemption and starvation times (the system's; tests pass a manual one).
    private let clock: any TimeSource
    private var stopping = false
    /// Scratch logits buffer, used only by the worker thread. Shape: [vocabularySize].
    private let logits: UnsafeMutableBufferPointer<Float>
    /// A round's batch, worker thread only: emptied but kept between rounds, so a round allocates
    /// nothing once they have grown to the largest batch.
    private var members: [GenerationJob] = []
    private var inputs: [PredictionInput] = []
    /// Finished stateless generations' KV caches for the prompts that share their prefixes
    /// (worker thread only; nil when its budget is 0).
    let prefixCache: PrefixCache?
    /// Speculative decoding for jobs stepping alone (nil: off).
    let speculation: Speculation?

    init(
        predictor: any TokenPredictor, policy: AdmissionPolicy = AdmissionPolicy(), metrics: Metrics = Metrics(),
        prefixCacheTokens: Int = 0, speculation: Speculation? = nil, name: String = "inferd-generation",
        clock: any TimeSource = .system
    ) {
        self.predictor = predictor
        self.speculation = speculation
        self.clock = clock
        self.prefixCache =
            prefixCacheTokens > 0
            ? PrefixCache(
                budgetTokens: prefixCacheTokens,
                reusable: { [predictor] in
                    predictor.reusablePrefix($0, keptPromptLength: $1, promptLength: $2)
                }, metrics: metrics) : nil
        self.admission = AdmissionQueue(policy: policy)
        self.metrics = AdmissionMetrics(metrics)
        self.logits = .allocate(capacity: predictor.vocabularySize)
        logits.initialize(repeating: 0)
        // A manual time source moved by a test: the thread looks at the queue's deadlines again.
        clock.onAdvance { [weak self] in
            guard let self else { return }
            self.condition.lock()
            self.condition.signal()
            self.condition.unlock()
        }
        // The thread keeps the worker alive until `stop()` lets it return (the runner stops it
        // when it goes away), so it never touches a freed worker.
        let thread = Thread { self.run() }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
    }

    deinit {
        logits.deallocate()
    }

    /// Gives the job a place, queues it, or refuses it (`serverBusy`, `shuttingDown`) before
    /// anything is computed. A job cancelled before it got here ends at once, computing nothing.
    func submit(_ job: GenerationJob) throws(GenerationError) {
        job.prefixCache = prefixCache  // before the lock hands the job to the worker thread
        job.speculation = speculation
        condition.lock()
        if stopping {
            condition.unlock()
            throw .shuttingDown
        }
        if job.isCancelled {
            condition.unlock()
            job.endWhileWaiting(timedOut: false)
            return
        }
        let decision = admission.submit(
            job.admissionID, priority: job.request.priority, tenant: job.request.scope.tenant,
            deadline: job.request.deadline, now: clock.now)
        switch decision {
        case .admitted:
            jobs[job.admissionID] = job
            incoming.append(job)
        case .queued:
            jobs[job.admissionID] = job
        case .refused(let queueLength, let retryAfter):
            condition.unlock()
            metrics.refusedBusy.increment()
            throw .serverBusy(queueLength: queueLength, retryAfterSeconds: retryAfter)
        }
        metrics.publish(admission)
        condition.signal()
        condition.unlock()
    }

    /// Jobs accepted and not yet ended, running or waiting (a shared generation is one job).
    var heldJobCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    /// A conservative check for callers that must answer before they can submit (a stream whose
    /// job starts later): throws `serverBusy` when a job submitted now would be refused.
    func checkCapacity() throws(GenerationError) {
        condition.lock()
        defer { condition.unlock() }
        let policy = admission.policy
        let full = admission.waitingCount >= policy.maxQueue
        let noPlace = admission.runningCount >= policy.maxActiveSequences || admission.waitingCount > 0
        if full && noPlace {
            metrics.refusedBusy.increment()
            throw .serverBusy(queueLength: admission.waitingCount, retryAfterSeconds: admission.retryAfterSeconds)
        }
    }

    /// Stops a job. A waiting (or parked) one leaves the queue and ends now, on this thread, with
    /// nothing more computed; a running one stops at its next step.
    func cancel(_ job: GenerationJob) {
        job.cancel()
        condition.lock()
        let removed = admission.remove(job.admissionID)
        if removed {
            jobs[job.admissionID] = nil
            metrics.publish(admission)
        }
        // Wakes the worker: it notices a cancelled running job, or tells the others their places.
        condition.signal()
        condition.unlock()
        if removed { job.endWhileWaiting(timedOut: false) }
    }

    /// Finishes every job as cancelled and ends the thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// One step of every active job. Decoding jobs (one token each) and whole prompt chunks share
    /// one batched prediction of at most the predictor's `maxTokensPerPass` tokens: one pass over the weights for
    /// all of them, so a new prompt is processed between, not instead of, the running streams'
    /// tokens. A prompt always advances by whole chunks from where it started, never by the room
    /// left in a pass: the split changes the rounding, and an answer must not depend on what else
    /// was running. Jobs that are starting or cancelled step alone (no compute). A batch refused
    /// by the predictor (it throws before changing anything) falls back to single steps, so an
    /// error lands on the job that caused it.
    private func stepRound(_ active: [GenerationJob]) {
        members.removeAll(keepingCapacity: true)
        inputs.removeAll(keepingCapacity: true)
        var room = predictor.maxTokensPerPass
        for job in active where job.isDecoding || job.isProcessingPrompt {
            guard members.count < predictor.maxSequencesPerPass, let input = job.batchInput(),
                input.tokens.count <= room
            else { continue }
            members.append(job)
            inputs.append(input)
            room -= input.tokens.count
        }
        if members.count >= 2 {
            do {
                try predictor.predict(batch: inputs)
                // The inputs hold slices of the jobs' histories; dropped first, the histories
                // stay uniquely referenced and take the new tokens in place.
                inputs.removeAll(keepingCapacity: true)
                for job in members { job.completeBatchedStep() }
            } catch {
                inputs.removeAll(keepingCapacity: true)
                for job in members { job.step(predictor: predictor, logits: logits) }
            }
        } else if let only = members.first {
            inputs.removeAll(keepingCapacity: true)  // its history slice, as above
            only.step(predictor: predictor, logits: logits)
        }
        // Starting and cancelled jobs; a prompt that found no room this round waits for the next.
        // A scored prompt's chunk runs alone here too.
        for job in active
        where !members.contains(where: { $0 === job }) && (!job.isProcessingPrompt || job.scoresPromptAlone) {
            job.step(predictor: predictor, logits: logits)
        }
    }

    /// What the worker thread takes from the shared state before a round.
    private struct Work {
        var newcomers: [GenerationJob] = []
        var actions: [(AdmissionQueue<ObjectIdentifier>.Action, GenerationJob)] = []
        var isEmpty: Bool { newcomers.isEmpty && actions.isEmpty }
    }

    private func run() {
        // This thread computes tokens (it is the compute pool's caller): long scheduler slices, so
        // the server's threads preempt it at once when they wake to write a snapshot or read a
        // request, instead of waiting up to a slice (CKernels/thread_slice.c).
        _ = ck_thread_prefer_throughput()
        var active: [GenerationJob] = []
        while true {
            condition.lock()
            var work = takeWork()
            var completing = prefixCache?.hasIncompleteEntries ?? false
            while work.isEmpty && active.isEmpty && !stopping {
                if completing, let prefixCache {
                    // Nothing to run: a piece of a kept conversation's answer, as prompt rows
                    // (`PrefixCache.completeStep`), then a look for new work.
                    condition.unlock()
                    completing = prefixCache.completeStep(predictor: predictor, logits: logits)
                    condition.lock()
                    work = takeWork()
                    continue
                }
                // Timed, so a deadline is noticed even when nothing else happens.
                if let wake = admission.nextWakeUp() {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: clock.timeLeft(until: wake).inSeconds))
                } else {
                    condition.wait()
                }
                work = takeWork()
            }
            let stop = stopping
            let drained = stop ? admission.removeAllWaiting().compactMap { jobs.removeValue(forKey: $0) } : []
            metrics.publish(admission)
            condition.unlock()

            for job in drained { job.endWhileWaiting(timedOut: false) }
            active += work.newcomers
            perform(work.actions, on: &active)
            if stop {
                for job in active { job.cancel() }
            }
            active.removeAll { $0.isDone }
            stepRound(active)
            let done = active.filter(\.isDone)
            active.removeAll { $0.isDone }
            for job in done { job.handOverSequence() }

            condition.lock()
            admission.stepped(active.lazy.map(\.admissionID))
            for job in done {
                admission.finished(job.admissionID, now: clock.now)
                jobs[job.admissionID] = nil
            }
            metrics.publish(admission)
            let finished = stopping && active.isEmpty && admission.isEmpty && incoming.isEmpty
            condition.unlock()
            if finished { return }
        }
    }

    /// Newly admitted jobs and the admission queue's actions as of now. Call with the lock held.
    private func takeWork() -> Work {
        var work = Work(newcomers: incoming)
        incoming.removeAll()
        for action in admission.update(now: clock.now) {
            switch action {
            case .admit(let id), .park(let id), .position(let id, _):
                if let job = jobs[id] { work.actions.append((action, job)) }
            case .expireWaiting(let id), .expireActive(let id):
                if let job = jobs.removeValue(forKey: id) { work.actions.append((action, job)) }
            }
        }
        return work
    }

    /// Applies the admission queue's actions to the running jobs (worker thread, lock not held).
    private func perform(
        _ actions: [(AdmissionQueue<ObjectIdentifier>.Action, GenerationJob)], on active: inout [GenerationJob]
    ) {
        for (action, job) in actions {
            switch action {
            case .admit:
                active.append(job)
            case .park:
                // Between steps: its sequence, sampler and text stay in the job until it resumes.
                active.removeAll { $0 === job }
                metrics.preemptions.increment()
            case .expireWaiting:
                metrics.timedOutWaiting.increment()
                job.endWhileWaiting(timedOut: true)
            case .expireActive:
                metrics.timedOutRunning.increment()
                job.endTimedOut()
            case .position(_, let position):
                job.notifyQueued(position: position)
            }
        }
    }
}
