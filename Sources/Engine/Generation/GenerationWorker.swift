import Foundation
import Synchronization

/// The engine's own thread: runs generation jobs step by step, round-robin, so compute never
/// blocks Swift's cooperative pool and several requests make progress together.
///
/// Each job is stepped once per turn (one prompt chunk or one token), and cancellation is
/// checked before every step, so a cancelled job stops within one step of its request.
final class GenerationWorker: @unchecked Sendable {
    private let predictor: any TokenPredictor
    private let condition = NSCondition()
    private var incoming: [GenerationJob] = []
    private var stopping = false
    private var thread: Thread?
    /// Scratch logits buffer, used only by the worker thread. Shape: [vocabularySize].
    private let logits: UnsafeMutableBufferPointer<Float>

    init(predictor: any TokenPredictor, name: String = "inferd-generation") {
        self.predictor = predictor
        self.logits = .allocate(capacity: predictor.vocabularySize)
        logits.initialize(repeating: 0)
        let thread = Thread { [unowned self] in self.run() }
        thread.name = name
        thread.stackSize = 8 << 20
        self.thread = thread
        thread.start()
    }

    deinit {
        logits.deallocate()
    }

    func submit(_ job: GenerationJob) {
        condition.lock()
        if stopping {
            condition.unlock()
            job.onFinish(.failure(.shuttingDown))
            return
        }
        incoming.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Wakes the worker so it notices a cancelled job even while it has nothing else to do.
    func poke() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    /// Finishes every job as cancelled and ends the thread.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// One step of every active job. Decoding jobs (one token each) and prompt chunks share one
    /// batched prediction of at most `GenerationJob.promptChunk` tokens: one pass over the
    /// weights for all of them, so a new prompt is processed between, not instead of, the
    /// running streams' tokens, and takes whatever room their tokens leave. Jobs that are
    /// starting or cancelled step alone (no compute). A batch refused by the predictor (it throws
    /// before changing anything) falls back to single steps, so an error lands on the job that
    /// caused it.
    private func stepRound(_ active: [GenerationJob]) {
        var members: [GenerationJob] = []
        var inputs: [PredictionInput] = []
        var budget = GenerationJob.promptChunk
        for job in active where job.isDecoding && budget > 0 {
            if let input = job.batchInput(tokenBudget: budget) {
                members.append(job)
                inputs.append(input)
                budget -= input.tokens.count
            }
        }
        for job in active where job.isProcessingPrompt && budget > 0 {
            if let input = job.batchInput(tokenBudget: budget) {
                members.append(job)
                inputs.append(input)
                budget -= input.tokens.count
            }
        }
        if members.count >= 2 {
            do {
                try predictor.predict(batch: inputs)
                for job in members { job.completeBatchedStep() }
            } catch {
                for job in members { job.step(predictor: predictor, logits: logits) }
            }
        } else if let only = members.first {
            only.step(predictor: predictor, logits: logits)
        }
        // Starting and cancelled jobs; a prompt that found no room this round waits for the next.
        for job in active where !members.contains(where: { $0 === job }) && !job.isProcessingPrompt {
            job.step(predictor: predictor, logits: logits)
        }
    }

    private func run() {
        var active: [GenerationJob] = []
        while true {
            condition.lock()
            while incoming.isEmpty && active.isEmpty && !stopping {
                condition.wait()
            }
            active.append(contentsOf: incoming)
            incoming.removeAll()
            let stop = stopping
            condition.unlock()
            if stop {
                for job in active { job.cancel() }
            }
            stepRound(active)
            active.removeAll { $0.isDone }
            if stop && active.isEmpty { return }
        }
    }
}
