import Engine
import Foundation
import StructuredOutput

/// `inferd bench --schema FILE`: the constraint's own costs with the model's vocabulary (schema
/// compile time, per-token mask time along random walks of allowed tokens) and decode speed
/// with and without the constraint (greedy, same prompt), at each thread count.
enum StructuredBench {
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    static func microseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
    }

    static func run(modelPath: String, schemaPath: String, threads: [Int], tokens: Int) async throws {
        let text = try String(contentsOfFile: schemaPath, encoding: .utf8)
        let clock = ContinuousClock()
        // Compile: parse, JSON Schema → grammar, grammar → matcher form; median of 21.
        var compileTimes: [Double] = []
        var compiled: CompiledGrammar?
        var identity = ""
        for _ in 0..<21 {
            let start = clock.now
            let format: StructuredFormat =
                schemaPath.hasSuffix(".gbnf") ? .grammar(text) : .jsonSchema(try JSONParser.parse(text))
            compiled = try format.compiledGrammar()
            identity = format.identity
            compileTimes.append(microseconds(clock.now - start))
        }
        compileTimes.sort()
        guard let grammar = compiled else { return }
        print(
            String(
                format: "schema %@: compile median %.2f ms (p99 %.2f ms), %d positions, %d rules",
                (schemaPath as NSString).lastPathComponent, percentile(compileTimes, 0.5) / 1000,
                percentile(compileTimes, 0.99) / 1000, grammar.positionCount, grammar.ruleCount))
        for t in threads {
            let engine = try InferenceEngine(path: modelPath, threads: t)
            let trieStart = clock.now
            let trie = engine.tokenTrie
            let trieMS = microseconds(clock.now - trieStart) / 1000
            // Mask time along random walks (each step a random allowed token), as MaskBench does.
            let matcher = GrammarMatcher(grammar: grammar)
            let allowed = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: (trie.vocabularySize + 63) / 64)
            defer { allowed.deallocate() }
            var maskTimes = randomWalks(
                trie: trie, start: { matcher.reset() }, step: { matcher.fillMask(trie: trie, allowed: allowed) },
                allows: { id in allowed[id >> 6] >> UInt64(id & 63) & 1 != 0 },
                accept: { token in _ = matcher.accept(bytes: trie.tokenBytes(token)!) })
            maskTimes.sort()
            let mean = maskTimes.reduce(0, +) / Double(max(maskTimes.count, 1))
            let step = processorStep(grammar: grammar, trie: trie, identity: identity)
            // INFERD_BENCH_DECODE=0: the constraint's own costs only (scripts/structured-compare.py).
            if ProcessInfo.processInfo.environment["INFERD_BENCH_DECODE"] == "0" {
                print(
                    String(
                        format:
                            "threads %d: trie %.1f ms (%d nodes); mask median %.1f us, mean %.1f us, p99 %.1f us, max %.1f us (%d masks); %@; decode not measured",
                        t, trieMS, trie.nodeCount, percentile(maskTimes, 0.5), mean, percentile(maskTimes, 0.99),
                        maskTimes.last ?? 0, maskTimes.count, step))
                engine.shutdown()
                continue
            }
            // Decode with and without the constraint: same prompt, greedy, the same token budget.
            let prompt = try engine.promptTokens(for: [
                ChatMessage(role: .user, content: "Answer with a JSON value for this schema: \(text.prefix(400))")
            ])
            var free = GenerationRequest(promptTokens: prompt, maxTokens: tokens, sampling: .greedy)
            free.ignoreEndOfGeneration = true
            var bound = GenerationRequest(promptTokens: prompt, maxTokens: tokens, sampling: .greedy)
            bound.constraint = GrammarConstraint(grammar: grammar, trie: trie, identity: identity)
            var freeSpeed: [Double] = []
            var boundSpeed: [Double] = []
            var boundTokens = 0
            for _ in 0..<3 {
                for (request, isBound) in [(free, false), (bound, true)] {
                    let r = try await engine.runner.generate(request)
                    if isBound {
                        boundSpeed.append(r.timings.generationTokensPerSecond)
                        boundTokens = r.usage.completionTokens
                    } else {
                        freeSpeed.append(r.timings.generationTokensPerSecond)
                    }
                }
            }
            freeSpeed.sort()
            boundSpeed.sort()
            let f = percentile(freeSpeed, 0.5)
            let b = percentile(boundSpeed, 0.5)
            print(
                String(
                    format:
                        "threads %d: trie %.1f ms (%d nodes); mask median %.1f us, mean %.1f us, p99 %.1f us, max %.1f us (%d masks); %@; decode %.1f tok/s unconstrained, %.1f tok/s constrained (%d tokens) = %.0f %%",
                    t, trieMS, trie.nodeCount, percentile(maskTimes, 0.5), mean, percentile(maskTimes, 0.99),
                    maskTimes.last ?? 0, maskTimes.count, step, f, b, boundTokens, f > 0 ? b / f * 100 : 0))
            engine.shutdown()
        }
    }

    /// The decode loop's whole per-token step of a constraint, along the same kind of random
    /// walk: the processor's `process(logits:)` (the mask, then, when keys must be distinct, the
    /// tracker's check of the allowed tokens that close a key, then -infinity written into the
    /// logits), which the mask figures above leave out; when keys must be distinct, the same
    /// walk without the tracker too, so the difference is its cost.
    static func processorStep(grammar: CompiledGrammar, trie: TokenTrie, identity: String) -> String {
        let with = processorTimes(grammar: grammar, trie: trie, identity: identity)
        var line = String(
            format: "step median %.1f us, p99 %.1f us (mask%@ and logits, %d steps)", percentile(with, 0.5),
            percentile(with, 0.99), grammar.distinctObjectKeys ? " + distinct keys" : "", with.count)
        if grammar.distinctObjectKeys {
            var plain = grammar
            plain.distinctObjectKeys = false
            let without = processorTimes(grammar: plain, trie: trie, identity: identity)
            line += String(
                format: ", without distinct keys median %.1f us, p99 %.1f us", percentile(without, 0.5),
                percentile(without, 0.99))
        }
        return line
    }

    /// Sorted times in µs of `process(logits:)` along the same random walks as the mask's.
    static func processorTimes(grammar: CompiledGrammar, trie: TokenTrie, identity: String) -> [Double] {
        let constraint = GrammarConstraint(grammar: grammar, trie: trie, identity: identity)
        let logits = UnsafeMutableBufferPointer<Float>.allocate(capacity: trie.vocabularySize)
        defer { logits.deallocate() }
        var processor = constraint.makeProcessor()
        return randomWalks(
            trie: trie, start: { processor = constraint.makeProcessor() },
            step: {
                logits.update(repeating: 0)
                processor.process(logits: logits)
            }, allows: { id in logits[id] == 0 }, accept: { token in _ = processor.accept(token: token) }
        ).sorted()
    }

    /// 20 walks of up to 60 steps from `start`: each step is timed (µs), then one of the tokens
    /// it `allows` (end of generation aside) is picked at random (seed 1) and accepted.
    static func randomWalks(
        trie: TokenTrie, start: () -> Void, step: () -> Void, allows: (Int) -> Bool, accept: (Int32) -> Void
    ) -> [Double] {
        let clock = ContinuousClock()
        var rng = SeededGenerator(seed: 1)
        var times: [Double] = []
        var choices: [Int32] = []
        choices.reserveCapacity(trie.vocabularySize)
        for _ in 0..<20 {
            start()
            for _ in 0..<60 {
                let begin = clock.now
                step()
                times.append(microseconds(clock.now - begin))
                choices.removeAll(keepingCapacity: true)
                for id in 0..<trie.vocabularySize where allows(id) && !trie.endOfGeneration.contains(Int32(id)) {
                    choices.append(Int32(id))
                }
                guard !choices.isEmpty else { break }
                accept(choices[Int(rng.next() % UInt64(choices.count))])
            }
        }
        return times
    }
}
