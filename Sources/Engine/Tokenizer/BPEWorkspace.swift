/// Scratch space for merging the bytes of one word into tokens, reused across the words of one
/// `encode` call so that merging allocates nothing per word.
///
/// Merging follows llama.cpp: the adjacent pair with the lowest merge rank merges first, ties
/// going to the leftmost pair; a finished symbol that is not a token falls back to its bytes.
struct BPEWorkspace {
    private struct Candidate: MergeCandidate {
        let rank: Int32
        let left: Int32
        let leftSymbol: Int32
        let rightSymbol: Int32
        let result: Int32

        @inline(__always) func precedes(_ other: Candidate) -> Bool {
            rank < other.rank || (rank == other.rank && left < other.left)
        }
    }

    private var symbols: [Int32] = []
    private var previous: [Int32] = []
    private var next: [Int32] = []
    private var heap = MergeQueue<Candidate>()

    mutating func encode(_ bytes: UnsafeBufferPointer<UInt8>, vocabulary: BPEVocabulary, into output: inout [Int32]) {
        let count = bytes.count
        if count == 0 { return }
        if count == 1 {
            appendSymbol(vocabulary.byteSymbols[Int(bytes[0])], vocabulary: vocabulary, into: &output)
            return
        }
        symbols.removeAll(keepingCapacity: true)
        previous.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        heap.removeAll()
        for index in 0..<count {
            symbols.append(vocabulary.byteSymbols[Int(bytes[index])])
            previous.append(Int32(index - 1))
            next.append(index + 1 < count ? Int32(index + 1) : -1)
        }
        for index in 0..<(count - 1) {
            pushCandidate(Int32(index), Int32(index + 1), vocabulary: vocabulary)
        }
        while let candidate = heap.pop() {
            let left = Int(candidate.left)
            guard symbols[left] == candidate.leftSymbol else { continue }
            let right = Int(next[left])
            guard right >= 0, symbols[right] == candidate.rightSymbol else { continue }
            symbols[left] = candidate.result
            symbols[right] = -1
            let after = next[right]
            next[left] = after
            if after >= 0 { previous[Int(after)] = Int32(left) }
            if previous[left] >= 0 { pushCandidate(previous[left], Int32(left), vocabulary: vocabulary) }
            if after >= 0 { pushCandidate(Int32(left), after, vocabulary: vocabulary) }
        }
        var index: Int32 = 0
        while index >= 0 {
            appendSymbol(symbols[Int(index)], vocabulary: vocabulary, into: &output)
            index = next[Int(index)]
        }
    }

    @inline(__always) private func appendSymbol(_ symbol: Int32, vocabulary: BPEVocabulary, into output: inout [Int32])
    {
        if Int(symbol) < vocabulary.tokenCount {
            output.append(symbol)
            return
        }
        // Not a token: spell it with the tokens of its single bytes (or the unknown token).
        for byte in vocabulary.extraSymbolBytes[Int(symbol) - vocabulary.tokenCount] {
            let byteSymbol = vocabulary.byteSymbols[Int(byte)]
            if Int(byteSymbol) < vocabulary.tokenCount {
                output.append(byteSymbol)
            } else if let unknown = vocabulary.unknownID {
                output.append(unknown)
            }
        }
    }

    private mutating func pushCandidate(_ left: Int32, _ right: Int32, vocabulary: BPEVocabulary) {
        let leftSymbol = symbols[Int(left)]
        let rightSymbol = symbols[Int(right)]
        guard let rule = vocabulary.mergeRule(leftSymbol, rightSymbol) else { return }
        heap.push(
            Candidate(
                rank: rule.rank, left: left, leftSymbol: leftSymbol, rightSymbol: rightSymbol, result: rule.result))
    }
}
