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

    /// With an alignment (the engine's prompt chunk), a reused prefix ends on a multiple of it
    /// and within the entry's exact tokens; a shorter match reuses nothing.
    @Test func reusedPrefixesEndOnWholeChunksWithinTheExactTokens() {
        let cache = PrefixCache(budgetTokens: 100, minimumTokens: 3, alignment: 4)
        let tokens: [Int32] = Array(1...20)
        cache.keep(sequence(tokens), scope: .shared, exactTokens: 12)
        // 18 tokens match, but only 12 were computed in whole chunks: 12.
        #expect(cache.longestPrefix(of: tokens.prefix(18) + [0], limit: 18, scope: .shared)?.count == 12)
        // 11 match: cut down to 8.
        #expect(cache.longestPrefix(of: tokens.prefix(11) + [0], limit: 11, scope: .shared)?.count == 8)
        // 3 match: below one chunk, nothing.
        #expect(cache.longestPrefix(of: tokens.prefix(3) + [0], limit: 3, scope: .shared) == nil)
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

    /// SmolLM2 (Q4_1 and Q8_0, no flash attention rows): logits after a copied prefix are the
    /// fresh computation's, bit for bit, whatever the prefix length and wherever the rest is cut.
    @Test func aCopiedPrefixGivesTheFreshLogitsBitForBit() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        #expect(model.rowsIndependentOfCut)
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let ids = try cases.map { c in
            try #require(c["prompt_ids"] as? [Int]).map { Int32($0) }
                + (try #require(c["generated_ids"] as? [Int])).map { Int32($0) }
        }
        let source = ids[0] + ids[1]  // longer than one 64-token chunk
        let vocabulary = model.config.vocabularySize
        let sourceCache = model.makeCache(capacity: source.count)
        var scratch = [Float](repeating: 0, count: vocabulary)
        try scratch.withUnsafeMutableBufferPointer {
            try model.forward(tokens: source[...], cache: sourceCache, logits: $0)
        }

        for shared in [1, 23, 64, 70] {
            let prompt = Array(source.prefix(shared)) + ids[2]
            var fresh = [Float](repeating: 0, count: vocabulary)
            try fresh.withUnsafeMutableBufferPointer {
                try model.forward(tokens: prompt[...], cache: model.makeCache(capacity: prompt.count), logits: $0)
            }
            let copy = try #require(
                model.makeSequence(capacity: prompt.count, copying: shared, of: sourceCache) as? KVCache)
            #expect(copy.tokens == Array(source.prefix(shared)))
            var reused = [Float](repeating: 0, count: vocabulary)
            try reused.withUnsafeMutableBufferPointer {
                try model.forward(tokens: prompt[shared...], cache: copy, logits: $0)
            }
            let differing = zip(fresh, reused).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(differing == 0, "prefix \(shared): \(differing) of \(vocabulary) logits differ")
        }
        // The source is left as it was.
        #expect(sourceCache.tokens == source)
    }

    /// Why reused prefixes end on whole prompt chunks: the prompt fed after a prefix of all but
    /// its last token computes that token alone, where a fresh run computes it inside a chunk;
    /// after a whole-chunk prefix, the rest goes in the fresh run's own chunks and the logits are
    /// the fresh ones bit for bit. Both through the runner as a request sees it.
    @Test func wholeChunkPrefixesGiveTheFreshRunsChunks() throws {
        let gguf = try GGUFFile(path: try TestFixtures.requireModel())
        let model = try LlamaModel(gguf: gguf, threads: 2)
        let cases = try #require(TestFixtures.reference("greedy.json")["cases"] as? [[String: Any]])
        let prompt = try (0..<3).flatMap { i in try #require(cases[i]["prompt_ids"] as? [Int]).map { Int32($0) } }
        #expect(prompt.count > 2 * GenerationJob.promptChunk - 20)
        let vocabulary = model.config.vocabularySize
        /// The logits after `prompt` fed as the job feeds it, in prompt chunks from `start`.
        func logits(from cache: KVCache, start: Int) throws -> [Float] {
            var out = [Float](repeating: 0, count: vocabulary)
            var next = start
            while next < prompt.count {
                let end = min(next + GenerationJob.promptChunk, prompt.count)
                try out.withUnsafeMutableBufferPointer {
                    try model.forward(tokens: prompt[next..<end], cache: cache, logits: $0)
                }
                next = end
            }
            return out
        }
        let source = model.makeCache(capacity: prompt.count)
        let fresh = try logits(from: source, start: 0)
        let aligned = try #require(
            model.makeSequence(capacity: prompt.count, copying: GenerationJob.promptChunk, of: source) as? KVCache)
        let reused = try logits(from: aligned, start: GenerationJob.promptChunk)
        #expect(zip(fresh, reused).allSatisfy { $0.bitPattern == $1.bitPattern })
        let lone = try #require(
            model.makeSequence(capacity: prompt.count, copying: prompt.count - 1, of: source) as? KVCache)
        let loneLogits = try logits(from: lone, start: prompt.count - 1)
        let differing = zip(fresh, loneLogits).filter { $0.bitPattern != $1.bitPattern }.count
        print("a lone last token after a copied prefix: \(differing) of \(vocabulary) logits differ from the fresh run")
    }

    /// Models whose rows follow llama.cpp's micro-batch (K-quant matrices with their batch
    /// orders, Gemma 3's flash attention rows) get no copy.
    @Test func noCopiesWhereTheCutCanChangeTheArithmetic() throws {
        let path = try WideTinyModel().write()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tiny = try LlamaModel(gguf: try GGUFFile(path: path), threads: 1)
        #expect(!tiny.rowsIndependentOfCut)
        let source = tiny.makeCache(capacity: 8)
        var logits = [Float](repeating: 0, count: tiny.config.vocabularySize)
        try logits.withUnsafeMutableBufferPointer {
            try tiny.forward(tokens: [1, 2, 3, 4, 5], cache: source, logits: $0)
        }
        #expect(tiny.makeSequence(capacity: 8, copying: 4, of: source) == nil)
    }

    /// What the guard prevents, on Gemma 3: a 70-token prompt takes flash attention's tiled
    /// arithmetic (64+ rows); after a copied 66-token prefix its last 4 rows would take the
    /// row-by-row one, and the logits change.
    @Test func onGemmaACopiedPrefixWouldChangeTheLogits() async throws {
        let model = try GemmaReferenceTests.model()
        #expect(!model.rowsIndependentOfCut)
        let prompt: [Int32] = [2] + (1..<70).map { Int32(1000 + $0 * 37) }
        let vocabulary = model.config.vocabularySize
        let source = model.makeCache(capacity: prompt.count)
        var fresh = [Float](repeating: 0, count: vocabulary)
        try fresh.withUnsafeMutableBufferPointer { try model.forward(tokens: prompt[...], cache: source, logits: $0) }
        #expect(model.makeSequence(capacity: prompt.count, copying: 66, of: source) == nil)
        let copy = model.makeCache(capacity: prompt.count)
        copy.copyPrefix(66, of: source)
        var reused = [Float](repeating: 0, count: vocabulary)
        try reused.withUnsafeMutableBufferPointer { try model.forward(tokens: prompt[66...], cache: copy, logits: $0) }
        #expect(zip(fresh, reused).contains { $0.bitPattern != $1.bitPattern })
        // So a runner over it keeps no finished caches: none could ever be reused.
        let metrics = Metrics()
        let runner = GenerationRunner(
            predictor: model, endOfGeneration: [], makeDecoder: { ByteDecoder() }, metrics: metrics,
            prefixCacheBytes: 16 << 20)
        defer { runner.shutdown() }
        _ = try await runner.generate(GenerationRequest(promptTokens: prompt, maxTokens: 2, sampling: .greedy))
        try await Task.sleep(for: .milliseconds(100))
        #expect(metrics.value("inferd_prefix_cache_tokens") == nil)
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
        // Longer than one prompt chunk (what is reused is whole chunks).
        let first = try (0..<3).flatMap { i in try #require(cases[i]["prompt_ids"] as? [Int]).map { Int32($0) } }
        let other = try #require(cases[3]["prompt_ids"] as? [Int]).map { Int32($0) }
        let second = Array(first.prefix(first.count - 2)) + other.suffix(5)
        let chunk = GenerationJob.promptChunk
        #expect(first.count - 2 >= chunk)
        let request = { (tokens: [Int32]) in GenerationRequest(promptTokens: tokens, maxTokens: 24, sampling: .greedy) }

        let cached = runner(prefixCacheBytes: 16 << 20)
        defer { cached.shutdown() }
        let a = try await cached.generate(request(first))
        #expect(a.usage.cachedTokens == 0)
        let b = try await cached.generate(request(second))
        #expect(b.usage.cachedTokens == first.count / chunk * chunk)

        let plain = runner(prefixCacheBytes: 0)
        defer { plain.shutdown() }
        let fresh = try await plain.generate(request(second))
        #expect(fresh.usage.cachedTokens == 0)
        #expect(b.tokens == fresh.tokens && b.content == fresh.content)
        // The same prompt again reuses its whole chunks.
        let again = try await cached.generate(request(second))
        #expect(again.usage.cachedTokens == (second.count - 1) / chunk * chunk && again.tokens == fresh.tokens)
        // Two requests started from kept prefixes; the cache holds the three finished ones'
        // tokens (the runner without a cache keeps none).
        #expect(metrics.value("inferd_prefix_cache_hits_total") == 2)
        #expect(
            metrics.value("inferd_prefix_cache_reused_tokens_total")
                == Double(b.usage.cachedTokens + again.usage.cachedTokens))
        let held = (first.count + a.tokens.count - 1) + 2 * (second.count + b.tokens.count - 1)
        // A job's cache is kept after its last step, which can come just after its result.
        var kept = metrics.value("inferd_prefix_cache_tokens")
        for _ in 0..<200 where kept != Double(held) {
            try await Task.sleep(for: .milliseconds(10))
            kept = metrics.value("inferd_prefix_cache_tokens")
        }
        #expect(kept == Double(held))
    }
}
