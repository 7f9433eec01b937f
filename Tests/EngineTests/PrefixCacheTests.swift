import Foundation
import Telemetry
import Testing

@testable import Engine

/// The prefix cache: a new prompt starts from the longest prefix it shares with a finished
/// request's KV cache, and only where that changes no result.
@Suite(.serialized)
struct PrefixCacheTests {
    private func sequence(_ tokens: [Int32]) -> ScriptedPredictor.Sequence {
        let s = ScriptedPredictor.Sequence(capacity: 64)
        s.tokens = tokens
        return s
    }

    @Test func picksTheLongestSharedPrefixAndEvictsTheLeastRecentlyUsed() {
        let cache = PrefixCache(budgetTokens: 20, minimumTokens: 3)
        let a = sequence([1, 2, 3, 4, 5, 6, 7, 8])
        let b = sequence([1, 2, 3, 9, 9, 9])
        cache.keep(a, scope: .shared)
        cache.keep(b, scope: .shared)
        cache.keep(sequence([1, 2]), scope: .shared)  // below the minimum: not kept
        #expect(cache.entries.count == 2 && cache.tokenCount == 14)

        let found = cache.longestPrefix(of: [1, 2, 3, 4, 5, 0], limit: 5, scope: .shared)
        #expect(found?.sequence === a && found?.count == 5)
        // The limit (the prompt's last token is always computed) caps the shared length.
        #expect(cache.longestPrefix(of: [1, 2, 3, 4, 5, 6, 7, 8], limit: 7, scope: .shared)?.count == 7)
        #expect(cache.longestPrefix(of: [1, 2, 7], limit: 2, scope: .shared) == nil)
        #expect(cache.longestPrefix(of: [5, 5, 5, 5], limit: 3, scope: .shared) == nil)

        // a was used last, so b goes first when a new entry passes the budget of 20 tokens.
        cache.keep(sequence([7, 7, 7, 7, 7, 7, 7]), scope: .shared)
        #expect(cache.entries.count == 2 && cache.tokenCount == 15)
        #expect(cache.longestPrefix(of: [1, 2, 3, 9, 9, 0], limit: 5, scope: .shared)?.sequence === a)
        // Larger than the whole budget: never kept.
        cache.keep(sequence(Array(repeating: 1, count: 21)), scope: .shared)
        #expect(cache.tokenCount == 15)
    }

    /// A reused prefix stays within the entry's prompt (its generated tokens were decode rows)
    /// and is what the predictor's rule allows of it, asked with the kept and the new prompt's
    /// lengths; a rule's answer under the minimum reuses nothing.
    @Test func reusedPrefixesStayWithinTheKeptPromptAndTheRule() {
        var asked: [[Int]] = []
        var allowed = 10
        let cache = PrefixCache(
            budgetTokens: 100, minimumTokens: 3,
            reusable: { shared, kept, new in
                asked.append([shared, kept, new])
                return min(shared, allowed)
            })
        let tokens: [Int32] = Array(1...20)
        cache.keep(sequence(tokens), scope: .shared, promptLength: 12)
        // 18 tokens match, but only 12 were its prompt; the rule allows 10.
        #expect(cache.longestPrefix(of: tokens.prefix(18) + [0], limit: 18, scope: .shared)?.count == 10)
        #expect(asked == [[12, 12, 19]])
        // 11 match: the rule is asked with 11.
        #expect(cache.longestPrefix(of: tokens.prefix(11) + [0], limit: 11, scope: .shared)?.count == 10)
        #expect(asked.last == [11, 12, 12])
        // The rule allows 2 of 11: under the minimum, nothing.
        allowed = 2
        #expect(cache.longestPrefix(of: tokens.prefix(11) + [0], limit: 11, scope: .shared) == nil)
        // 2 match: under the minimum before the rule is asked.
        let before = asked.count
        #expect(cache.longestPrefix(of: tokens.prefix(2) + [0], limit: 2, scope: .shared) == nil)
        #expect(asked.count == before)
    }

    /// An entry is reused only by a request of the scope that made it: another tenant, or the
    /// same tenant with another cache salt, finds nothing, however much of the prompt matches.
    @Test func anEntryServesOnlyItsOwnScope() {
        let cache = PrefixCache(budgetTokens: 40, minimumTokens: 3)
        let a = GenerationScope(tenant: "key-a")
        let secret = sequence([1, 2, 3, 4, 5, 6, 7, 8])
        cache.keep(secret, scope: a)
        let probe: [Int32] = [1, 2, 3, 4, 5, 6, 0]
        #expect(cache.longestPrefix(of: probe, limit: 6, scope: GenerationScope(tenant: "key-b")) == nil)
        #expect(cache.longestPrefix(of: probe, limit: 6, scope: .shared) == nil)
        #expect(
            cache.longestPrefix(of: probe, limit: 6, scope: GenerationScope(tenant: "key-a", cacheSalt: "s")) == nil)
        let own = cache.longestPrefix(of: probe, limit: 6, scope: a)
        #expect(own?.sequence === secret && own?.count == 6)
        // Another tenant's entry of the same tokens is its own, and found only by that tenant.
        let other = sequence([1, 2, 3, 4, 5, 6, 7, 8])
        cache.keep(other, scope: GenerationScope(tenant: "key-b"))
        #expect(cache.longestPrefix(of: probe, limit: 6, scope: GenerationScope(tenant: "key-b"))?.sequence === other)
        #expect(cache.longestPrefix(of: probe, limit: 6, scope: a)?.sequence === secret)
    }

    /// The logits after `prompt` fed from `start` on `cache` as the engine feeds it: pieces of
    /// the whole prompt ending on multiples of the prompt chunk.
    private func logits(_ model: LlamaModel, _ prompt: [Int32], from cache: KVCache, start: Int) throws -> [Float] {
        var out = [Float](repeating: 0, count: model.config.vocabularySize)
        var next = start
        while next < prompt.count {
            let end = min((next / GenerationJob.promptChunk + 1) * GenerationJob.promptChunk, prompt.count)
            try out.withUnsafeMutableBufferPointer {
                try model.forward(prompt: prompt[next..<end], of: prompt.count, cache: cache, logits: $0)
            }
            next = end
        }
        return out
    }

    /// The logits of `prompt` computed fresh, in one call, and its cache.
    private func fresh(_ model: LlamaModel, _ prompt: [Int32]) throws -> (logits: [Float], cache: KVCache) {
        let cache = model.makeCache(capacity: prompt.count)
        var out = [Float](repeating: 0, count: model.config.vocabularySize)
        try out.withUnsafeMutableBufferPointer { try model.forward(tokens: prompt[...], cache: cache, logits: $0) }
        return (out, cache)
    }

    private func differing(_ a: [Float], _ b: [Float]) -> Int {
        zip(a, b).filter { $0.bitPattern != $1.bitPattern }.count
    }

    /// Copies `count` rows of `source` (the kept prompt) and feeds the rest of `prompt`: the
    /// number of logits that differ from the fresh run's.
    private func reuse(
        _ model: LlamaModel, _ count: Int, of source: KVCache, for prompt: [Int32], fresh: [Float]
    ) throws -> Int {
        let copy = try #require(model.makeSequence(capacity: prompt.count, copying: count, of: source) as? KVCache)
        #expect(copy.tokens == Array(source.tokens.prefix(count)))
        return differing(fresh, try logits(model, prompt, from: copy, start: count))
    }

    /// SmolLM2 (Q4_1, no batch-dependent orders, no flash attention rows): every row of a kept
    /// prompt is reusable, and logits after a copied prefix are the fresh computation's, bit for
    /// bit, whatever the prefix length, down to all but the last token (computed alone, it takes
    /// the batch's kernels as a piece of the prompt; as a call of its own its 49,152 logits all
    /// differed).
    @Test func aCopiedPrefixGivesTheFreshLogitsBitForBit() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let ids = try cases.map { c in
            try #require(c["prompt_ids"] as? [Int]).map { Int32($0) }
                + (try #require(c["generated_ids"] as? [Int])).map { Int32($0) }
        }
        let source = ids[0] + ids[1]  // longer than one 64-token chunk
        let (_, sourceCache) = try fresh(model, source)
        for shared in [1, 23, 64, 70] {
            let prompt = Array(source.prefix(shared)) + ids[2]
            #expect(model.reusablePrefix(shared, keptPromptLength: source.count, promptLength: prompt.count) == shared)
            let differ = try reuse(model, shared, of: sourceCache, for: prompt, fresh: try fresh(model, prompt).logits)
            #expect(differ == 0, "prefix \(shared): \(differ) logits differ")
        }
        let lone = try reuse(
            model, source.count - 1, of: sourceCache, for: source, fresh: try fresh(model, source).logits)
        #expect(lone == 0, "a lone last token: \(lone) logits differ")
        // The source is left as it was.
        #expect(sourceCache.tokens == source)
    }

    /// K-quant matrices (every type, `WideTinyModel`): a row's products follow its place in its
    /// micro-batch (4-row groups, tiles from 8 rows), so a 70-token prompt's last two rows
    /// (outside its 68 grouped ones) are not those a 150-token prompt computes. The rule keeps
    /// 68, and after them the logits are the fresh ones bit for bit; short prompts (under 8
    /// rows, untiled) share no row with long ones.
    @Test func kQuantRowsAreReusedWhereTheirArithmeticIsTheFreshOnes() throws {
        let path = try WideTinyModel().write(contextLength: 256)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tiny = try LlamaModel(gguf: try GGUFFile(path: path), threads: 2)
        #expect(tiny.hasBatchOrders)
        let vocabulary = Int32(WideTinyModel.vocab)
        let long: [Int32] = (0..<150).map { Int32(($0 * 37 + 11) % Int(vocabulary)) }
        let kept = Array(long.prefix(70))
        let (_, keptCache) = try fresh(tiny, kept)
        #expect(tiny.reusablePrefix(70, keptPromptLength: 70, promptLength: 150) == 68)
        let freshLong = try fresh(tiny, long).logits
        #expect(try reuse(tiny, 68, of: keptCache, for: long, fresh: freshLong) == 0)
        let past = try reuse(tiny, 70, of: keptCache, for: long, fresh: freshLong)
        print("K-quant rows copied past the rule: \(past) of \(vocabulary) logits differ")
        // A prompt of 150 shares all its rows' arithmetic with one of 200 (both 4-row aligned at
        // 148 and 200): everything but the 2-row tail.
        #expect(tiny.reusablePrefix(150, keptPromptLength: 150, promptLength: 200) == 148)
        #expect(tiny.reusablePrefix(6, keptPromptLength: 6, promptLength: 150) == 0)
    }

    /// Gemma 3 (Q4_K_M, flash attention tiled from 64 rows): a kept 70-token prompt's rows are
    /// reused by a 150-token one up to the 4-row groups' end, bit for bit; a kept 40-token prompt
    /// (row-by-row attention) gives a 100-token one nothing. A runner over it keeps its finished
    /// caches.
    @Test func onGemmaKeptRowsAreReusedWhereExact() async throws {
        let model = try GemmaReferenceTests.model()
        let long: [Int32] = [2] + (1..<150).map { Int32(1000 + $0 * 37) }
        let kept = Array(long.prefix(70))
        let (_, keptCache) = try fresh(model, kept)
        let reusable = model.reusablePrefix(70, keptPromptLength: 70, promptLength: 150)
        #expect(reusable == 68)
        #expect(try reuse(model, reusable, of: keptCache, for: long, fresh: try fresh(model, long).logits) == 0)
        #expect(model.reusablePrefix(40, keptPromptLength: 40, promptLength: 100) == 0)
        let metrics = Metrics()
        let runner = GenerationRunner(
            predictor: model, endOfGeneration: [], makeDecoder: { ByteDecoder() }, metrics: metrics,
            prefixCacheBytes: 16 << 20)
        defer { runner.shutdown() }
        let first = try await runner.generate(GenerationRequest(promptTokens: kept, maxTokens: 2, sampling: .greedy))
        #expect(first.usage.cachedTokens == 0)
        // Idle, the worker recomputes the kept rows that a longer prompt computes otherwise
        // (68 on) and the answer's as prompt rows: the 70 prompt tokens are then all reusable.
        var completed = metrics.value("inferd_prefix_cache_completed_tokens_total") ?? 0
        for _ in 0..<500 where completed < 4 {
            try await Task.sleep(for: .milliseconds(10))
            completed = metrics.value("inferd_prefix_cache_completed_tokens_total") ?? 0
        }
        #expect(completed == 4)
        let second = try await runner.generate(GenerationRequest(promptTokens: long, maxTokens: 2, sampling: .greedy))
        #expect(second.usage.cachedTokens == 70)
    }

    /// A kept conversation's answer, computed one token per step as decode rows, is not reused
    /// (a fresh prompt computes those rows otherwise) until the idle worker recomputes it as
    /// prompt rows (`PrefixCache.completeStep`); then the next turn's prompt (the conversation
    /// resent with a new message) reuses all of it, and its logits are the fresh ones bit for bit.
    @Test(arguments: ["smollm2", "gemma3"])
    func anIdleCompletionMakesTheAnswerReusable(_ name: String) throws {
        let model =
            name == "gemma3"
            ? try GemmaReferenceTests.model()
            : try LlamaModel(gguf: try GGUFFile(path: try TestFixtures.requireModel()), threads: 2)
        let first: [Int32] = [2] + (1..<30).map { Int32(1000 + $0 * 37) }
        let answer: [Int32] = (0..<40).map { Int32(5000 + $0 * 11) }
        let history = first + answer
        // The job's sequence: the prompt in one call, then the answer one token per step (all
        // but the last answer token are fed).
        let sequence = model.makeCache(capacity: history.count + 8)
        var scratch = [Float](repeating: 0, count: model.config.vocabularySize)
        try scratch.withUnsafeMutableBufferPointer { buffer in
            try model.forward(tokens: first[...], cache: sequence, logits: buffer)
            for t in answer.dropLast() { try model.forward(tokens: [t], cache: sequence, logits: buffer) }
        }
        let next = history + [7, 8, 9, 10, 11, 12, 13]
        let fresh = try fresh(model, next).logits
        func kept() -> PrefixCache {
            let cache = PrefixCache(
                budgetTokens: 4096, reusable: { model.reusablePrefix($0, keptPromptLength: $1, promptLength: $2) })
            let copy = model.makeCache(capacity: sequence.capacity)
            copy.copyPrefix(sequence.count, of: sequence)
            cache.keep(copy, scope: .shared, promptLength: first.count, history: history)
            return cache
        }
        // Not completed: the answer's rows are not offered.
        let plain = kept()
        #expect(plain.hasIncompleteEntries)
        let before = plain.longestPrefix(of: next, limit: next.count - 1, scope: .shared)?.count ?? 0
        #expect(before <= first.count)
        // Completed while idle: every token of the conversation, the last answer token too.
        let completed = kept()
        var steps = 1  // calls made, the last one saying nothing is left
        scratch.withUnsafeMutableBufferPointer { buffer in
            while completed.completeStep(predictor: model, logits: buffer) { steps += 1 }
            #expect(!completed.hasIncompleteEntries && steps >= answer.count / PrefixCache.completionPiece)
        }
        let found = try #require(completed.longestPrefix(of: next, limit: next.count - 1, scope: .shared))
        #expect(found.count == history.count)
        let copy = try #require(found.sequence as? KVCache)
        #expect(try reuse(model, found.count, of: copy, for: next, fresh: fresh) == 0)
    }

    /// Through the runner: the second request starts after the prefix it shares with the first
    /// (reported as cached tokens) and answers exactly what a runner without the cache answers.
    @Test func aStatelessRequestStartsFromAFinishedOnesPrefix() async throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let tokenizer = try Tokenizer(gguf: gguf)
        let metrics = Metrics()
        func runner(prefixCacheBytes: Int) -> GenerationRunner {
            GenerationRunner(
                predictor: model, endOfGeneration: tokenizer.endOfGenerationIDs,
                makeDecoder: { StreamingDetokenizer(tokenizer: tokenizer) }, metrics: metrics,
                prefixCacheBytes: prefixCacheBytes)
        }
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let first = try (0..<3).flatMap { i in try #require(cases[i]["prompt_ids"] as? [Int]).map { Int32($0) } }
        let other = try #require(cases[3]["prompt_ids"] as? [Int]).map { Int32($0) }
        let second = Array(first.prefix(first.count - 2)) + other.suffix(5)
        let shared = zip(first, second).prefix { $0 == $1 }.count
        #expect(shared >= first.count - 2)
        let request = { (tokens: [Int32]) in GenerationRequest(promptTokens: tokens, maxTokens: 24, sampling: .greedy) }

        let cached = runner(prefixCacheBytes: 16 << 20)
        defer { cached.shutdown() }
        let a = try await cached.generate(request(first))
        #expect(a.usage.cachedTokens == 0)
        let b = try await cached.generate(request(second))
        #expect(b.usage.cachedTokens == shared)

        let plain = runner(prefixCacheBytes: 0)
        defer { plain.shutdown() }
        let fresh = try await plain.generate(request(second))
        #expect(fresh.usage.cachedTokens == 0)
        #expect(b.tokens == fresh.tokens && b.content == fresh.content)
        // The same prompt again reuses all but its last token (always computed: the first
        // answer token is sampled from its logits).
        let again = try await cached.generate(request(second))
        #expect(again.usage.cachedTokens == second.count - 1 && again.tokens == fresh.tokens)
        // Two requests started from kept prefixes; the cache holds the three finished ones'
        // tokens (the runner without a cache keeps none).
        #expect(metrics.value("inferd_prefix_cache_hits_total") == 2)
        #expect(
            metrics.value("inferd_prefix_cache_reused_tokens_total")
                == Double(b.usage.cachedTokens + again.usage.cachedTokens))
        // Each entry holds its prompt and its whole answer (the last token is computed idle).
        let held = (first.count + a.tokens.count) + 2 * (second.count + b.tokens.count)
        // A job's cache is kept after its last step, which can come just after its result.
        var kept = metrics.value("inferd_prefix_cache_tokens")
        for _ in 0..<200 where kept != Double(held) {
            try await Task.sleep(for: .milliseconds(10))
            kept = metrics.value("inferd_prefix_cache_tokens")
        }
        #expect(kept == Double(held))
    }
}
