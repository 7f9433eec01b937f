/// The merge candidates of one word, best first: a binary min-heap over `precedes`, kept between
/// words (`removeAll` keeps its storage) so encoding allocates nothing once it has grown.
/// BPE orders candidates by merge rank, SentencePiece by score; both break ties leftmost first.
protocol MergeCandidate {
    /// Whether this candidate merges before `other`.
    func precedes(_ other: Self) -> Bool
}

struct MergeQueue<Candidate: MergeCandidate> {
    private var heap: [Candidate] = []

    mutating func removeAll() { heap.removeAll(keepingCapacity: true) }

    mutating func push(_ candidate: Candidate) {
        heap.append(candidate)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Candidate? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if heap.isEmpty { return top }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            if left >= heap.count { break }
            var best = left
            if left + 1 < heap.count && heap[left + 1].precedes(heap[left]) { best = left + 1 }
            guard heap[best].precedes(heap[parent]) else { break }
            heap.swapAt(best, parent)
            parent = best
        }
        return top
    }
}
