import Testing

@testable import Engine

@Suite struct SamplerTests {
    func sample(_ logits: [Float], _ options: SamplingOptions, recent: [Int32] = []) -> Int32 {
        var s = Sampler(options: options)
        var copy = logits
        return copy.withUnsafeMutableBufferPointer { s.sample(logits: $0, recent: recent[...], generated: []) }
    }

    /// The logits after one greedy step's penalties: `prompt` then `answer` is the sequence,
    /// `answer` the generated part.
    func penalized(_ logits: [Float], _ options: SamplingOptions, prompt: [Int32], answer: [Int32]) -> [Float] {
        var s = Sampler(options: options)
        var copy = logits
        let history = prompt + answer
        _ = copy.withUnsafeMutableBufferPointer {
            s.sample(logits: $0, recent: history[...], generated: history[prompt.count...])
        }
        return copy
    }

    func options(_ t: Float, k: Int = 0, p: Float = 1, minP: Float = 0, seed: UInt64 = 1) -> SamplingOptions {
        var o = SamplingOptions()
        o.temperature = t
        o.topK = k
        o.topP = p
        o.minP = minP
        o.seed = seed
        return o
    }

    @Test func greedyTakesTheHighestAndTheLowestIdOnTies() {
        #expect(sample([0.1, 3, -2, 3], .greedy) == 1)
    }

    @Test func topKOfOneIsGreedyWhateverTheTemperature() {
        for seed in 0..<20 as Range<UInt64> {
            #expect(sample([0.1, 2, 1.9, -1], options(5, k: 1, seed: seed)) == 1)
        }
    }

    @Test func minPDropsUnlikelyTokens() {
        // p(0) ≈ 0.73, p(1) ≈ 0.27, p(2) tiny: min_p 0.1 keeps 0 and 1 only.
        var seen = Set<Int32>()
        for seed in 0..<300 as Range<UInt64> { seen.insert(sample([2, 1, -6], options(1, minP: 0.1, seed: seed))) }
        #expect(seen == [0, 1])
    }

    /// Probabilities of [2, 1, 0.5, -6]: 0.628, 0.231, 0.140, 0.0002.
    @Test func topPKeepsTheSmallestSetReachingP() {
        var seen = Set<Int32>()
        for seed in 0..<300 as Range<UInt64> { seen.insert(sample([2, 1, 0.5, -6], options(1, p: 0.6, seed: seed))) }
        #expect(seen == [0])
        seen = []
        for seed in 0..<300 as Range<UInt64> { seen.insert(sample([2, 1, 0.5, -6], options(1, p: 0.85, seed: seed))) }
        #expect(seen == [0, 1])
    }

    @Test func temperatureSpreadsChoices() {
        var counts = [Int](repeating: 0, count: 3)
        for seed in 0..<1000 as Range<UInt64> { counts[Int(sample([1, 0.9, 0.8], options(1, seed: seed)))] += 1 }
        #expect(counts.allSatisfy { $0 > 200 }, "\(counts)")
    }

    @Test func sameSeedSameSequenceDifferentSeedDifferent() {
        func run(_ seed: UInt64) -> [Int32] {
            var s = Sampler(options: options(1, seed: seed))
            var out: [Int32] = []
            for _ in 0..<50 {
                var logits: [Float] = (0..<32).map { Float($0 % 5) * 0.3 }
                out.append(logits.withUnsafeMutableBufferPointer { s.sample(logits: $0, recent: [], generated: []) })
            }
            return out
        }
        #expect(run(42) == run(42))
        #expect(run(42) != run(43))
    }

    @Test func repeatPenaltyDemotesRecentTokens() {
        var o = SamplingOptions.greedy
        o.repeatPenalty = 1.5
        #expect(sample([3, 2.5, 0], .greedy, recent: [0]) == 0)
        #expect(sample([3, 2.5, 0], o, recent: [0]) == 1)
        // Only the last N count.
        o.repeatLastN = 1
        #expect(sample([3, 2.5, 0], o, recent: [0, 2]) == 0)
    }

    @Test func validationNamesTheOption() {
        var o = SamplingOptions()
        o.temperature = -1
        #expect(throws: GenerationError.invalidOption(name: "temperature", reason: "must be between 0 and 100")) {
            try o.validate()
        }
    }

    @Test func aTokenRepeatedInTheWindowIsPenalizedOnce() {
        var o = SamplingOptions.greedy
        o.repeatPenalty = 1.5
        var sampler = Sampler(options: o)
        // Once: 3 / 1.5 = 2 still beats 1.5; three times it would not (0.89).
        var logits: [Float] = [3, 1.5, 0]
        #expect(
            logits.withUnsafeMutableBufferPointer { sampler.sample(logits: $0, recent: [0, 0, 0], generated: []) } == 0)
        #expect(logits[0] == 2)
        // The same sampler remembers nothing of the last window.
        logits = [3, 1.5, 0]
        #expect(logits.withUnsafeMutableBufferPointer { sampler.sample(logits: $0, recent: [2], generated: []) } == 0)
        #expect(logits[0] == 3)
    }

    /// Token 0 three times and token 2 once in the answer; token 1 only in the prompt.
    @Test func frequencyPenaltySubtractsOncePerOccurrenceInTheAnswer() {
        var o = SamplingOptions.greedy
        o.frequencyPenalty = 0.5
        let out = penalized([3, 2, 1, 0.25], o, prompt: [1, 1, 1], answer: [0, 2, 0, 0])
        // 3 - 3 × 0.5 = 1.5, 1 - 0.5 = 0.5: exact in binary.
        #expect(out == [1.5, 2, 0.5, 0.25] as [Float])
    }

    @Test func presencePenaltySubtractsOnceForEveryTokenInTheAnswer() {
        var o = SamplingOptions.greedy
        o.presencePenalty = 0.75
        let out = penalized([3, 2, 1, 0.25], o, prompt: [1, 1, 1], answer: [0, 2, 0, 0])
        // 3 - 0.75 = 2.25, 1 - 0.75 = 0.25 (token 0 occurs 3 times, counted once).
        #expect(out == [2.25, 2, 0.25, 0.25] as [Float])
    }

    @Test func bothPenaltiesAddUpAndANegativeOneFavoursSeenTokens() {
        var o = SamplingOptions.greedy
        o.frequencyPenalty = 0.5
        o.presencePenalty = -1
        // 3 - (2 * 0.5 - 1) = 3; 1 - (0.5 - 1) = 1.5.
        let out = penalized([3, 2, 1, 0.25], o, prompt: [], answer: [0, 0, 2])
        #expect(out == [3, 2, 1.5, 0.25] as [Float])
    }

    @Test func thePromptIsNotCounted() {
        var o = SamplingOptions.greedy
        o.frequencyPenalty = 2
        o.presencePenalty = 2
        let logits: [Float] = [3, 2, 1]
        #expect(penalized(logits, o, prompt: [0, 0, 1, 2], answer: []) == logits)
        // And it decides a greedy choice: token 0 leads until the answer holds it once.
        #expect(sampleGreedy(logits, o, prompt: [0, 0, 0], answer: []) == 0)
        #expect(sampleGreedy(logits, o, prompt: [], answer: [0]) == 1)
    }

    func sampleGreedy(_ logits: [Float], _ options: SamplingOptions, prompt: [Int32], answer: [Int32]) -> Int32 {
        var s = Sampler(options: options)
        var copy = logits
        let history = prompt + answer
        return copy.withUnsafeMutableBufferPointer {
            s.sample(logits: $0, recent: history[...], generated: history[prompt.count...])
        }
    }

    @Test func zeroPenaltiesLeaveTheLogitsBitForBit() {
        var rng = SeededGenerator(seed: 5)
        var logits: [Float] = (0..<256).map { _ in rng.nextUnitFloat() * 20 - 10 }
        logits[3] = -.infinity
        logits[4] = -0.0
        logits[5] = .leastNonzeroMagnitude
        let answer: [Int32] = (0..<100).map { Int32($0 * 7 % 256) }
        let out = penalized(logits, .greedy, prompt: [1, 2], answer: answer)
        #expect(out.map(\.bitPattern) == logits.map(\.bitPattern))
    }

    @Test func aMaskedTokenStaysMaskedWhateverThePenalty() {
        for (frequency, presence) in [(2, 2), (-2, -2), (2, -2), (-2, 2)] as [(Float, Float)] {
            var o = SamplingOptions.greedy
            o.frequencyPenalty = frequency
            o.presencePenalty = presence
            o.repeatPenalty = 1.5
            let out = penalized([-.infinity, 1, -.infinity], o, prompt: [2], answer: [0, 0, 2, 1])
            #expect(out[0] == -.infinity && out[2] == -.infinity, "\(frequency), \(presence)")
            #expect(out[1].isFinite)
        }
    }

    /// One sampler, two answers: the second sees only its own tokens.
    @Test func countsDoNotCarryOverFromOneAnswerToTheNext() {
        var o = SamplingOptions.greedy
        o.frequencyPenalty = 1
        var sampler = Sampler(options: o)
        var logits: [Float] = [3, 2.5, 0]
        let first: [Int32] = [9, 0, 0]
        #expect(
            logits.withUnsafeMutableBufferPointer {
                sampler.sample(logits: $0, recent: first[...], generated: first[1...])
            } == 1)
        #expect(logits == [1, 2.5, 0] as [Float])
        logits = [3, 2.5, 0]
        let second: [Int32] = [9, 2]
        #expect(
            logits.withUnsafeMutableBufferPointer {
                sampler.sample(logits: $0, recent: second[...], generated: second[1...])
            } == 0)
        #expect(logits == [3, 2.5, -1] as [Float])
    }

    @Test func penaltiesOutsideMinusTwoToTwoAreRefusedNamingTheField() {
        for (name, value) in [("presence_penalty", 2.5), ("frequency_penalty", -2.01), ("presence_penalty", Float.nan)]
            as [(String, Float)]
        {
            var o = SamplingOptions()
            if name == "presence_penalty" { o.presencePenalty = value } else { o.frequencyPenalty = value }
            #expect(throws: GenerationError.invalidOption(name: name, reason: "must be between -2 and 2")) {
                try o.validate()
            }
        }
        var o = SamplingOptions()
        o.presencePenalty = -2
        o.frequencyPenalty = 2
        #expect(throws: Never.self) { try o.validate() }
    }

    @Test func heapSortOrdersLikeTheStandardSort() {
        var rng = SeededGenerator(seed: 3)
        for count in [0, 1, 2, 7, 64, 1000] {
            // Few distinct logits, so ties (broken by id) are common.
            let candidates = (0..<count).map { Sampler.Candidate(id: Int32($0), logit: Float(rng.next() % 9)) }
            let before: (Sampler.Candidate, Sampler.Candidate) -> Bool = {
                $0.logit > $1.logit || ($0.logit == $1.logit && $0.id < $1.id)
            }
            var sorted = candidates
            sorted.withUnsafeMutableBufferPointer { Sampler.heapSort($0, by: before) }
            #expect(sorted.map(\.id) == candidates.sorted(by: before).map(\.id), "count \(count)")
        }
    }
}
