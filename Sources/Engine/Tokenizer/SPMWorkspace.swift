/// Scratch space for SentencePiece merging, reused across the stretches of one `encode` call.
///
/// Follows llama.cpp's SPM session: symbols are byte ranges of whole characters in a linked
/// list; every adjacent pair whose text is a token is a candidate with that token's score; the
/// highest score merges first, ties going to the leftmost pair; a candidate whose symbols have
/// changed since it was queued is dropped.
struct SPMWorkspace {
    private struct Candidate: MergeCandidate {
        let score: Float
        let left: Int32
        let right: Int32
        let length: Int32

        @inline(__always) func precedes(_ other: Candidate) -> Bool {
            score > other.score || (score == other.score && left < other.left)
        }
    }

    private var starts: [Int32] = []
    private var lengths: [Int32] = []
    private var previous: [Int32] = []
    private var next: [Int32] = []
    private var heap = MergeQueue<Candidate>()

    mutating func encode(_ bytes: UnsafeBufferPointer<UInt8>, model: SPMModel, into output: inout [Int32]) {
        if bytes.isEmpty { return }
        starts.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        previous.removeAll(keepingCapacity: true)
        next.removeAll(keepingCapacity: true)
        heap.removeAll()
        var offset = 0
        while offset < bytes.count {
            let lead = bytes[offset]
            // As llama.cpp's unicode_len_utf8: the lead byte's high bits give the length.
            let length = min(lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4, bytes.count - offset)
            previous.append(Int32(starts.count - 1))
            starts.append(Int32(offset))
            lengths.append(Int32(length))
            offset += length
            next.append(offset == bytes.count ? -1 : Int32(starts.count))
        }
        for index in 1..<starts.count {
            pushCandidate(Int32(index - 1), Int32(index), bytes: bytes, model: model)
        }
        while let candidate = heap.pop() {
            let left = Int(candidate.left)
            let right = Int(candidate.right)
            if lengths[left] == 0 || lengths[right] == 0 || lengths[left] + lengths[right] != candidate.length {
                continue
            }
            lengths[left] += lengths[right]
            lengths[right] = 0
            next[left] = next[right]
            if next[right] >= 0 { previous[Int(next[right])] = Int32(left) }
            if previous[left] >= 0 { pushCandidate(previous[left], Int32(left), bytes: bytes, model: model) }
            if next[left] >= 0 { pushCandidate(Int32(left), next[left], bytes: bytes, model: model) }
        }
        var index: Int32 = 0
        while index >= 0 {
            let symbol = UnsafeBufferPointer(
                rebasing: bytes[Int(starts[Int(index)])..<Int(starts[Int(index)] + lengths[Int(index)])])
            if let id = model.table.lookup.id(symbol) {
                output.append(id)
            } else {
                // Only single characters can fail to be tokens (merges only form tokens).
                for byte in symbol {
                    if let id = model.byteTokens[Int(byte)] { output.append(id) }
                }
            }
            index = next[Int(index)]
        }
    }

    private mutating func pushCandidate(
        _ left: Int32, _ right: Int32, bytes: UnsafeBufferPointer<UInt8>, model: SPMModel
    ) {
        let start = Int(starts[Int(left)])
        let length = Int(lengths[Int(left)] + lengths[Int(right)])
        guard let id = model.table.lookup.id(UnsafeBufferPointer(rebasing: bytes[start..<(start + length)])) else {
            return
        }
        heap.push(Candidate(score: model.scores[Int(id)], left: left, right: right, length: Int32(length)))
    }
}
