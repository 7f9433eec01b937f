/// A pushdown recognizer over bytes for a `CompiledGrammar`: the state is a set of stacks, each
/// stack's top at a terminal position (the byte sets that may come next), its lower entries the
/// positions to continue at when a rule ends. Stacks are nodes in an arena, hash-consed
/// (position, parent) so equal stacks are one node: ambiguity never multiplies them, and a set of
/// stacks is a set of node ids.
///
/// Everything lives in buffers that are kept between calls: after the first few tokens,
/// advancing and mask computation allocate nothing. Not thread-safe; one per generation.
public final class GrammarMatcher {
    let grammar: CompiledGrammar

    // Arena: node i is (position[i], parent[i]); parent -1 is the bottom.
    var nodePosition: [Int32] = []
    var nodeParent: [Int32] = []
    var nodeNext: [Int32] = []
    /// When this node was last added to a state being built (`epoch`), to keep states duplicate-free.
    var nodeStamp: [UInt32] = []
    var buckets: [Int32]
    var bucketMask: Int
    var epoch: UInt32 = 0

    /// States, stacked: state k is `tops[levelStart[k]..<levelEnd[k]]`, `levelAccepting[k]`.
    /// Level 0 is the current state; the mask walk uses the levels above it.
    var tops: [Int32] = []
    var levelStart: [Int] = [0]
    var levelEnd: [Int] = [0]
    var levelAccepting: [Bool] = [false]

    /// Nodes kept between tokens before the arena is compacted.
    static let compactionThreshold = 1 << 18

    public init(grammar: CompiledGrammar) {
        self.grammar = grammar
        buckets = [Int32](repeating: -1, count: 1 << 12)
        bucketMask = (1 << 12) - 1
        reset()
    }

    /// Back to the start of the grammar.
    public func reset() {
        nodePosition.removeAll(keepingCapacity: true)
        nodeParent.removeAll(keepingCapacity: true)
        nodeNext.removeAll(keepingCapacity: true)
        nodeStamp.removeAll(keepingCapacity: true)
        for i in buckets.indices { buckets[i] = -1 }
        tops.removeAll(keepingCapacity: true)
        epoch &+= 1
        var accepting = false
        let r = grammar.root
        for a in grammar.alternatives[Int(grammar.ruleStart[Int(r)])..<Int(grammar.ruleEnd[Int(r)])] {
            close(a, parent: -1, accepting: &accepting)
        }
        levelStart[0] = 0
        levelEnd[0] = tops.count
        levelAccepting[0] = accepting
    }

    /// The output so far is a complete match (end of generation may come now).
    public var canEnd: Bool { levelAccepting[0] }
    /// No byte can come next: the output is complete and must end.
    public var mustEnd: Bool { levelEnd[0] == levelStart[0] }
    /// Neither a byte nor the end: the output so far is not a prefix of any match.
    public var isDead: Bool { mustEnd && !canEnd }

    // MARK: - Arena

    @inline(__always)
    func node(_ position: Int32, _ parent: Int32) -> Int32 {
        let h = Int(truncatingIfNeeded: (UInt32(bitPattern: position) &* 0x9E37_79B1) ^ UInt32(bitPattern: parent &* 0x2C1B_3C6D))
        let b = (h ^ (h >> 15)) & bucketMask
        var i = buckets[b]
        while i >= 0 {
            if nodePosition[Int(i)] == position && nodeParent[Int(i)] == parent { return i }
            i = nodeNext[Int(i)]
        }
        let id = Int32(nodePosition.count)
        nodePosition.append(position)
        nodeParent.append(parent)
        nodeNext.append(buckets[b])
        nodeStamp.append(0)
        buckets[b] = id
        if nodePosition.count > buckets.count * 2 { rehash(buckets.count * 4) }
        return id
    }

    @inline(__always)
    func bucket(of id: Int) -> Int {
        let h = Int(
            truncatingIfNeeded: (UInt32(bitPattern: nodePosition[id]) &* 0x9E37_79B1)
                ^ UInt32(bitPattern: nodeParent[id] &* 0x2C1B_3C6D))
        return (h ^ (h >> 15)) & bucketMask
    }

    func rehash(_ size: Int) {
        buckets = [Int32](repeating: -1, count: size)
        bucketMask = size - 1
        for id in 0..<nodePosition.count {
            let b = bucket(of: id)
            nodeNext[id] = buckets[b]
            buckets[b] = Int32(id)
        }
    }

    /// Removes the nodes made since `mark` (newest first, so each is its bucket's head).
    func truncateArena(to mark: Int) {
        var id = nodePosition.count - 1
        while id >= mark {
            buckets[bucket(of: id)] = nodeNext[id]
            id -= 1
        }
        nodePosition.removeSubrange(mark...)
        nodeParent.removeSubrange(mark...)
        nodeNext.removeSubrange(mark...)
        nodeStamp.removeSubrange(mark...)
    }

    // MARK: - Closure and advance

    /// Adds to the state being built (at the end of `tops`) every stack that continues at
    /// `position` under `parent`, expanded until each top is a terminal. Reaching the end of the
    /// root sets `accepting`.
    func close(_ position: Int32, parent: Int32, accepting: inout Bool) {
        let id = node(position, parent)
        if nodeStamp[Int(id)] == epoch { return }
        nodeStamp[Int(id)] = epoch
        switch grammar.kinds[Int(position)] {
        case .terminal:
            tops.append(id)
        case .reference:
            // A reference in tail position returns straight to the parent: repetition by right
            // recursion runs in constant stack depth.
            let continuation = grammar.kinds[Int(position) + 1] == .end ? parent : node(position + 1, parent)
            let r = Int(grammar.arguments[Int(position)])
            for a in grammar.alternatives[Int(grammar.ruleStart[r])..<Int(grammar.ruleEnd[r])] {
                close(a, parent: continuation, accepting: &accepting)
            }
        case .end:
            if parent < 0 {
                accepting = true
            } else {
                close(nodePosition[Int(parent)], parent: nodeParent[Int(parent)], accepting: &accepting)
            }
        }
    }

    /// Builds state `level` from state `level - 1` after `byte`; false when it is empty and not
    /// accepting (no stack took the byte).
    @inline(__always)
    func advance(level: Int, byte: UInt8) -> Bool {
        tops.removeSubrange(levelEnd[level - 1]...)
        epoch &+= 1
        var accepting = false
        let start = tops.count
        for k in levelStart[level - 1]..<levelEnd[level - 1] {
            let top = tops[k]
            let position = nodePosition[Int(top)]
            if grammar.terminal(position, matches: byte) {
                close(position + 1, parent: nodeParent[Int(top)], accepting: &accepting)
            }
        }
        levelStart[level] = start
        levelEnd[level] = tops.count
        levelAccepting[level] = accepting
        return accepting || tops.count > start
    }

    func ensureLevels(_ n: Int) {
        while levelStart.count <= n {
            levelStart.append(0)
            levelEnd.append(0)
            levelAccepting.append(false)
        }
    }

    /// The current state's tops, kept while `accept` runs so a rejected token leaves it unchanged.
    private var savedTops: [Int32] = []

    /// Advances the current state over `bytes`; false (and the state unchanged) when they do
    /// not continue a match.
    @discardableResult
    public func accept<C: Collection<UInt8>>(bytes: C) -> Bool {
        ensureLevels(1)
        savedTops.removeAll(keepingCapacity: true)
        savedTops.append(contentsOf: tops[levelStart[0]..<levelEnd[0]])
        let savedAccepting = levelAccepting[0]
        let mark = nodePosition.count
        for b in bytes {
            guard advance(level: 1, byte: b) else {
                tops.removeAll(keepingCapacity: true)
                tops.append(contentsOf: savedTops)
                levelStart[0] = 0
                levelEnd[0] = tops.count
                levelAccepting[0] = savedAccepting
                truncateArena(to: mark)
                return false
            }
            moveLevel(from: 1, to: 0)
        }
        if nodePosition.count > Self.compactionThreshold { compact() }
        return true
    }

    /// Copies state `from` into state `to` (to < from, `tops` above `to` is discarded).
    private func moveLevel(from: Int, to: Int) {
        let count = levelEnd[from] - levelStart[from]
        let target = levelStart[to]
        for k in 0..<count { tops[target + k] = tops[levelStart[from] + k] }
        levelEnd[to] = target + count
        levelAccepting[to] = levelAccepting[from]
        tops.removeSubrange(levelEnd[to]...)
    }

    /// Keeps only the nodes the current state reaches, renumbered in order (a parent is always
    /// older than its children, so order is kept).
    func compact() {
        var live = [Bool](repeating: false, count: nodePosition.count)
        for k in levelStart[0]..<levelEnd[0] {
            var n = tops[k]
            while n >= 0 && !live[Int(n)] {
                live[Int(n)] = true
                n = nodeParent[Int(n)]
            }
        }
        var newID = [Int32](repeating: -1, count: nodePosition.count)
        var count = 0
        for id in 0..<nodePosition.count where live[id] {
            newID[id] = Int32(count)
            nodePosition[count] = nodePosition[id]
            let p = nodeParent[id]
            nodeParent[count] = p < 0 ? -1 : newID[Int(p)]
            count += 1
        }
        nodePosition.removeSubrange(count...)
        nodeParent.removeSubrange(count...)
        nodeNext.removeSubrange(count...)
        nodeStamp.removeSubrange(count...)
        for i in nodeStamp.indices { nodeStamp[i] = 0 }
        for k in levelStart[0]..<levelEnd[0] { tops[k] = newID[Int(tops[k])] }
        rehash(buckets.count)
    }

    // MARK: - Saved states (tests and references)

    /// The current state, to come back to with `restore`.
    public struct Snapshot: Sendable, Equatable {
        var tops: [Int32]
        var accepting: Bool
    }

    public func snapshot() -> Snapshot {
        Snapshot(tops: Array(tops[levelStart[0]..<levelEnd[0]]), accepting: levelAccepting[0])
    }

    /// Returns to a snapshot taken from this matcher since its last `reset` or compaction.
    public func restore(_ s: Snapshot) {
        tops.removeAll(keepingCapacity: true)
        tops.append(contentsOf: s.tops)
        levelStart[0] = 0
        levelEnd[0] = tops.count
        levelAccepting[0] = s.accepting
    }
}
