import Foundation
import Synchronization
import Telemetry

/// One generation in progress on the engine's worker thread.
///
/// Everything but `cancelRequested` is touched only by the worker thread, one step at a time:
/// a step is one prompt chunk or one decoded token, and cancellation is checked before each.
final class GenerationJob: @unchecked Sendable {
    /// A prompt is fed in chunks of the model's own internal step, so that it is cut at the same
    /// places whatever else shares the pass (the cut changes the rounding; see `LlamaModel.maxBatch`).
    static let promptChunk = LlamaModel.maxBatch

    enum Phase {
        case waiting
        case prompt(next: Int)
        case decode
        case done
    }

    let request: GenerationRequest
    let vocabularySize: Int
    let endOfGeneration: Set<Int32>
    let onEvent: @Sendable (GenerationEvent) -> Void
    let onFinish: @Sendable (Result<GenerationResult, GenerationError>) -> Void
    let cancelRequested = Atomic<Bool>(false)
    let cancelRequestedAt = Locked<ContinuousClock.Instant?>(nil)
    /// True once the job has ended: queue positions, reported by the worker, must not follow the
    /// end, which a cancelling thread may report while the job waits (see `notifyQueued`).
    let ended = Locked<Bool>(false)

    var phase: Phase = .waiting
    var sequence: (any PredictorSequence)!
    var sampler: Sampler
    /// The request's constraint at work (made when the job starts).
    var processor: (any LogitsProcessor)?
    /// A stop string cut the answer (a constrained answer cut so is not complete).
    var stoppedByString = false
    /// Which stop string that was.
    var stopSequence: String?
    var decoder: any IncrementalTextDecoder
    let matcher: StopStringMatcher
    var decodedText = ""
    var visibleCount = 0
    /// The prompt and the generated tokens, newest last: the sampler's look-back and the decode
    /// step's input. Reserved for the whole answer at the start, so a token never reallocates it.
    var history: [Int32] = []
    /// The tokens generated so far (empty until the job has started).
    var generated: ArraySlice<Int32> { history.isEmpty ? [] : history[request.promptTokens.count...] }
    var cachedTokens = 0
    /// Where a stateless job starts from a finished one's prefix and leaves its own sequence
    /// when it ends (the worker's; worker thread only).
    var prefixCache: PrefixCache?
    /// Speculative decoding when the job steps alone (the worker's), and its scratch: the
    /// verified tokens and their rows' logits (grown at the first speculative step).
    var speculation: Speculation?
    var verifyInput: [Int32] = []
    var verifyRows: [Float] = []
    /// How many tokens the next draft may have (nil: the speculation's most).
    var draftLimit: Int?
    /// This job's drafter (made at its first speculative step).
    var drafter: (any Drafter)?
    var stepsAfterCancel = 0
    /// With `logprobs`: the sampled token's entry, recorded once the token is accepted as text.
    var pendingLogprob: TokenLogprob?
    /// With raw log-probabilities: the model's logits before the mask and penalties (allocated
    /// once, at the first token).
    var rawLogits: [Float] = []
    /// With a scored prompt: its tokens' entries so far, and every row's logits of one chunk
    /// (allocated at the first chunk).
    var promptScores: [TokenLogprob] = []
    var scoreRows: [Float] = []
    var startedAt = ContinuousClock.now
    var promptDoneAt: ContinuousClock.Instant?

    init(
        request: GenerationRequest, vocabularySize: Int, decoder: any IncrementalTextDecoder,
        endOfGeneration: Set<Int32>,
        onEvent: @escaping @Sendable (GenerationEvent) -> Void,
        onFinish: @escaping @Sendable (Result<GenerationResult, GenerationError>) -> Void
    ) {
        self.request = request
        self.vocabularySize = vocabularySize
        self.decoder = decoder
        self.endOfGeneration = endOfGeneration
        self.onEvent = onEvent
        self.onFinish = onFinish
        self.sampler = Sampler(options: request.sampling)
        self.matcher = StopStringMatcher(stops: request.stop)
    }

    func cancel() {
        if !cancelRequested.exchange(true, ordering: .acquiringAndReleasing) {
            cancelRequestedAt.withLock { $0 = .now }
        }
    }

    var isCancelled: Bool { cancelRequested.load(ordering: .acquiring) }
    var isDone: Bool {
        if case .done = phase { return true }
        return false
    }

    /// Runs one step. `logits` is the worker's scratch buffer (vocabulary-sized).
    func step(predictor: any TokenPredictor, logits: UnsafeMutableBufferPointer<Float>) {
        if isCancelled {
            finish(.cancelled)
            return
        }
        do {
            switch phase {
            case .waiting:
                try start(predictor: predictor)
            case .prompt(let next) where scoresPrompt:
                try scorePrompt(from: next, predictor: predictor, logits: logits)
            case .prompt(let next):
                let end = promptChunkEnd(from: next)
                try predictor.predict(
                    prompt: request.promptTokens[next..<end], of: request.promptTokens.count, sequence: sequence,
                    logits: logits)
                promptAdvanced(to: end, logits: logits)
            case .decode:
                if let drafts = drafts(), !drafts.isEmpty {
                    try speculate(drafts, predictor: predictor)
                } else {
                    try predictor.predict(tokens: lastToken, sequence: sequence, logits: logits)
                    accept(sampleNext(logits: logits))
                }
            case .done:
                return
            }
        } catch let error as GenerationError {
            fail(error)
        } catch {
            fail(.computeFailed("\(error)"))
        }
        if isCancelled && !isDone { stepsAfterCancel += 1 }
    }

    /// Decoding and not cancelled: its next step is one token.
    var isDecoding: Bool {
        guard case .decode = phase, !isCancelled else { return false }
        return true
    }

    /// Processing its prompt and not cancelled: its next step is a chunk of prompt tokens.
    var isProcessingPrompt: Bool {
        guard case .prompt = phase, !isCancelled else { return false }
        return true
    }

    /// Scores its prompt (completions' `echo`): every row's logits, so it is never batched.
    var scoresPrompt: Bool { request.logprobs?.scoresPrompt == true }

    /// Scoring its prompt and not cancelled: its next step runs alone (never in a batch).
    var scoresPromptAlone: Bool { scoresPrompt && isProcessingPrompt }

    /// This job's own logits buffer, for batched steps (the worker's scratch serves single steps).
    private(set) lazy var batchLogits: UnsafeMutableBufferPointer<Float> = {
        let b = UnsafeMutableBufferPointer<Float>.allocate(capacity: vocabularySize)
        b.initialize(repeating: 0)
        return b
    }()
    private var batchLogitsAllocated = false
    /// Prompt tokens in the batched step being computed (0 when it is a decode step).
    private var batchedPromptEnd = 0

    /// This job's share of a batched step: its next token when decoding, or its next prompt
    /// chunk (the same chunk a single step would compute) when processing its prompt.
    func batchInput() -> PredictionInput? {
        guard !isCancelled, !scoresPromptAlone else { return nil }
        let tokens: ArraySlice<Int32>
        switch phase {
        case .decode:
            tokens = lastToken
            batchedPromptEnd = 0
        case .prompt(let next):
            let end = promptChunkEnd(from: next)
            tokens = request.promptTokens[next..<end]
            batchedPromptEnd = end
        default:
            return nil
        }
        batchLogitsAllocated = true
        let promptLength = batchedPromptEnd > 0 ? request.promptTokens.count : 0
        return PredictionInput(tokens: tokens, sequence: sequence, logits: batchLogits, promptLength: promptLength)
    }

    /// Where the prompt step from `next` ends: on the next multiple of `promptChunk`, so that
    /// wherever a prompt starts from (0, a reused prefix, a session's kept tokens) it goes on in
    /// the chunks a fresh run of the whole prompt takes.
    private func promptChunkEnd(from next: Int) -> Int {
        min((next / Self.promptChunk + 1) * Self.promptChunk, request.promptTokens.count)
    }

    /// The token a decode step feeds the model: the newest one, as a slice of the history.
    private var lastToken: ArraySlice<Int32> { history[(history.count - 1)...] }

    /// Finishes a batched step whose logits are in `batchLogits`.
    func completeBatchedStep() {
        switch phase {
        case .prompt:
            promptAdvanced(to: batchedPromptEnd, logits: batchLogits)
        case .decode:
            accept(sampleNext(logits: batchLogits))
        default:
            return
        }
        if isCancelled && !isDone { stepsAfterCancel += 1 }
    }

    deinit {
        if batchLogitsAllocated { batchLogits.deallocate() }
    }

    /// The prompt is in the cache up to `end`; at its end, the first token is sampled.
    private func promptAdvanced(to end: Int, logits: UnsafeMutableBufferPointer<Float>) {
        if end < request.promptTokens.count {
            phase = .prompt(next: end)
        } else {
            promptDoneAt = .now
            onEvent(.started(promptTokens: request.promptTokens.count, cachedTokens: cachedTokens))
            // `max_tokens: 0` (a scored prompt's): the prompt was all there was to compute.
            guard request.maxTokens > 0 else {
                finish(.length)
                return
            }
            accept(sampleNext(logits: logits))
        }
    }

    /// One chunk of a scored prompt: each token's log-probability given those before it, from
    /// the row after its predecessor; the last row's logits go to `logits` for the first sample.
    private func scorePrompt(
        from next: Int, predictor: any TokenPredictor, logits: UnsafeMutableBufferPointer<Float>
    ) throws {
        let prompt = request.promptTokens
        let end = promptChunkEnd(from: next)
        let v = vocabularySize
        let top = request.logprobs?.top ?? 0
        if scoreRows.isEmpty { scoreRows = Array(repeating: 0, count: Self.promptChunk * v) }
        var normalizers = [Float](repeating: 0, count: end - next)
        try scoreRows.withUnsafeMutableBufferPointer { rows in
            // Rows: [end - next × vocabulary], row t after prompt token next + t.
            try normalizers.withUnsafeMutableBufferPointer { logZ in
                try predictor.score(
                    tokens: prompt[next..<end], promptLength: prompt.count, sequence: sequence, rows: rows,
                    normalizers: logZ)
            }
            for p in next..<end {
                let row = UnsafeBufferPointer(rebasing: rows[((p - next) * v)..<((p - next + 1) * v)])
                guard p + 1 < prompt.count else {
                    _ = logits.update(fromContentsOf: row)
                    break
                }
                let token = prompt[p + 1]
                let computed = Sampler.logprob(of: token, logits: row, top: top, logZ: normalizers[p - next])
                promptScores.append(
                    TokenLogprob(
                        id: token, bytes: decoder.spelledBytes(of: token), logprob: computed.logprob,
                        top: computed.top.map {
                            .init(id: $0.id, bytes: decoder.spelledBytes(of: $0.id), logprob: $0.logprob)
                        }))
            }
        }
        if end == prompt.count {
            request.logprobs?.setPrompt(
                PromptLogprobs(
                    firstID: prompt[0], firstBytes: decoder.spelledBytes(of: prompt[0]), scored: promptScores))
            scoreRows = []
        }
        promptAdvanced(to: end, logits: logits)
    }

    private func start(predictor: any TokenPredictor) throws(GenerationError) {
        let prompt = request.promptTokens
        guard !prompt.isEmpty else { throw .emptyPrompt }
        // No tokens to generate is a prompt pass alone: only a scored prompt wants that.
        guard request.maxTokens >= (scoresPrompt ? 0 : 1), prompt.count + request.maxTokens <= predictor.contextLength
        else {
            throw .contextOverflow(
                promptTokens: prompt.count, maxTokens: request.maxTokens, contextLength: predictor.contextLength)
        }
        try request.sampling.validate()
        processor = request.constraint?.makeProcessor()
        startedAt = .now
        let needed = prompt.count + request.maxTokens
        history.reserveCapacity(needed)
        history.append(contentsOf: prompt)
        if !scoresPrompt, let existing = request.sequence, existing.capacity >= needed {
            // Reuse the longest shared prefix, but always recompute at least the last prompt
            // token: its logits are what the first generated token is sampled from.
            let shared = zip(existing.tokens, prompt).prefix { $0 == $1 }.count
            cachedTokens = min(shared, prompt.count - 1)
            existing.truncate(to: cachedTokens)
            sequence = existing
        } else if !scoresPrompt, request.sequence == nil,
            let found = prefixCache?.longestPrefix(of: prompt, limit: prompt.count - 1, scope: request.scope),
            let copy = predictor.makeSequence(capacity: needed, copying: found.count, of: found.sequence)
        {
            // The same rule as above: the last prompt token is always computed.
            cachedTokens = found.count
            sequence = copy
            prefixCache?.reused(found.count)
        } else {
            request.sequence?.truncate(to: 0)
            sequence = predictor.makeSequence(capacity: needed)
        }
        phase = .prompt(next: cachedTokens)
    }

    /// At the end of a stateless job, its sequence goes to the prefix cache (a session's stays
    /// the session's). Worker thread, after the job's last step.
    func handOverSequence() {
        guard isDone, request.sequence == nil, let prefixCache, let kept = sequence else { return }
        sequence = nil
        // Its prompt's rows, all in this prompt's arithmetic (a reused prefix's rows were
        // copied only where that arithmetic is theirs).
        prefixCache.keep(kept, scope: request.scope, promptLength: request.promptTokens.count, history: history)
    }

    func sampleNext(logits: UnsafeMutableBufferPointer<Float>) -> Int32 {
        if request.ignoreEndOfGeneration {
            for id in endOfGeneration where Int(id) < logits.count { logits[Int(id)] = -.infinity }
        }
        guard let recorder = request.logprobs else {
            // The mask first, then the penalties: a masked token stays -infinity (see `Sampler`).
            processor?.process(logits: logits)
            return sampler.sample(logits: logits, recent: history[...], generated: generated)
        }
        if recorder.distribution == .raw {
            if rawLogits.count != logits.count { rawLogits = Array(repeating: 0, count: logits.count) }
            rawLogits.withUnsafeMutableBufferPointer { _ = $0.initialize(fromContentsOf: logits) }
        }
        processor?.process(logits: logits)
        let token = sampler.sample(logits: logits, recent: history[...], generated: generated)
        let computed =
            recorder.distribution == .raw
            ? rawLogits.withUnsafeBufferPointer { Sampler.logSoftmax(of: token, logits: $0, top: recorder.top) }
            : sampler.processedLogprob(of: token, logits: UnsafeBufferPointer(logits), top: recorder.top)
        pendingLogprob = TokenLogprob(
            id: token, bytes: decoder.bytes(of: token), logprob: computed.logprob,
            top: computed.top.map { .init(id: $0.id, bytes: decoder.bytes(of: $0.id), logprob: $0.logprob) })
        return token
    }

    func accept(_ token: Int32) {
        history.append(token)
        if let processor, !processor.accept(token: token) {
            // The mask allowed nothing (a vocabulary that cannot spell the grammar): stop here.
            finish(.stop)
            return
        }
        if endOfGeneration.contains(token) {
            if let entry = pendingLogprob { request.logprobs?.setEnd(entry) }
            pendingLogprob = nil
            finish(.stop)
            return
        }
        // Before the snapshot that shows the token (readers take entries up to its count).
        if let entry = pendingLogprob {
            request.logprobs?.append(entry)
            pendingLogprob = nil
        }
        let piece = decoder.append(token)
        if !piece.isEmpty {
            decodedText += piece
            switch matcher.check(decodedText) {
            case .stopped(let at):
                stoppedByString = true
                // The stop strings that begin there: the longest one that is complete (a client
                // told which one ended the answer, as Anthropic's `stop_sequence`).
                let tail = decodedText.dropFirst(at)
                stopSequence = request.stop.filter { !$0.isEmpty && tail.hasPrefix($0) }.max { $0.count < $1.count }
                decodedText = String(decodedText.prefix(at))
                visibleCount = at
                finish(.stop)
                return
            case .visible(let n):
                if n != visibleCount {
                    visibleCount = n
                    onEvent(.snapshot(content: String(decodedText.prefix(n)), completionTokens: generated.count))
                }
            }
        }
        if let processor, processor.mustEnd {
            // The grammar is complete and nothing may follow: end without asking the model.
            finish(.stop)
        } else if generated.count >= request.maxTokens {
            finish(.length)
        } else {
            phase = .decode
        }
    }

    func finish(_ reason: FinishReason) {
        guard !isDone else { return }
        phase = .done
        let now = ContinuousClock.now
        let promptEnd = promptDoneAt ?? now
        let promptMS = (promptEnd - startedAt).milliseconds
        let genMS = promptDoneAt.map { (now - $0).milliseconds } ?? 0
        let computed = request.promptTokens.count - cachedTokens
        // A stopped answer shows everything decoded; held-back text was never a stop string.
        let content = reason == .cancelled ? String(decodedText.prefix(visibleCount)) : decodedText
        var result = GenerationResult(
            content: content, finishReason: reason,
            usage: GenerationUsage(
                promptTokens: request.promptTokens.count, completionTokens: generated.count,
                cachedTokens: cachedTokens),
            timings: GenerationTimings(
                promptMilliseconds: promptMS, generationMilliseconds: genMS,
                promptTokensPerSecond: promptMS > 0 ? Double(computed) / promptMS * 1000 : 0,
                generationTokensPerSecond: genMS > 0 ? Double(max(generated.count - 1, 0)) / genMS * 1000 : 0),
            tokens: Array(generated), stepsAfterCancel: stepsAfterCancel)
        result.constraintSatisfied = processor.map { _ in constraintSatisfied(reason) }
        result.stopSequence = reason == .stop ? stopSequence : nil
        onFinish(.success(result))
    }

    /// A constrained answer is complete when it ended (end of generation or the grammar's own
    /// end) where the grammar allows; a cut or cancelled one never is.
    private func constraintSatisfied(_ reason: FinishReason) -> Bool {
        guard reason == .stop, !stoppedByString, let processor else { return false }
        return processor.canEnd
    }

    func fail(_ error: GenerationError) {
        guard !isDone else { return }
        phase = .done
        onFinish(.failure(error))
    }
}
