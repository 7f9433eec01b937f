/// A pushdown recognizer over bytes for a `CompiledGrammar`, run as a lazily built automaton.
///
/// A stack is a node in an arena, hash-consed by (position, parent), so equal stacks are one
/// node: each top is at a terminal position (a byte set that may come next), its lower entries
/// the positions to continue at when a rule ends. A matcher state is a set of stacks, interned
/// too, so a state is an id; the state after a byte is computed once and remembered in a
/// transition table (`transitions[state * 256 + byte]`). Inside a JSON string, for example, every
/// character leads back to the same state, so after the first few bytes a mask walk over the
/// whole token trie is table lookups. The mask of a state is kept in a small cache as well.
///
/// Buffers only grow, and only when states never seen before appear; past a bound the memory is
/// flushed and rebuilt from the current state. Not thread-safe; one per generation.
public final class GrammarMatcher {
    let grammar: CompiledGrammar

    // Every stored `var` below is `@exclusivity(unchecked)`: a matcher is used by one thread at
    // a time (a shared one under its `GrammarConstraint`'s lock; the dynamic checks never saw
    // other threads anyway), and no access to one of them overlaps another access to the same
    // one (the walks hold only their own level arrays, which `computeStep` and `close` never
    // touch). Why: the dynamic checks (`swift_beginAccess` on every array read and write of the
    // closure, the interning and the walks) were about 40 % of a tool grammar's mask time under
    // `perf`.

    // Arena: node i is (position[i], parent[i]); parent -1 is the bottom.
    @exclusivity(unchecked) var nodePosition: [Int32] = []
    @exclusivity(unchecked) var nodeParent: [Int32] = []
    @exclusivity(unchecked) var nodeNext: [Int32] = []
    /// When this node was last added to a state being built (`epoch`), to keep states duplicate-free.
    @exclusivity(unchecked) var nodeStamp: [UInt32] = []
    @exclusivity(unchecked) var buckets: [Int32]
    @exclusivity(unchecked) var bucketMask: Int
    @exclusivity(unchecked) var epoch: UInt32 = 0

    // Interned states: state s is `stateTops[stateStart[s]..<stateStart[s + 1]]` (sorted node ids).
    @exclusivity(unchecked) var stateTops: [Int32] = []
    @exclusivity(unchecked) var stateStart: [Int32] = [0]
    @exclusivity(unchecked) var stateAccepting: [Bool] = []
    @exclusivity(unchecked) var stateNext: [Int32] = []
    @exclusivity(unchecked) var stateBuckets: [Int32]
    @exclusivity(unchecked) var stateBucketMask: Int
    /// 256 entries per state: -2 not computed yet, -1 no match continues with that byte (set
    /// when the state is made for the bytes none of its tops takes, `initializeRow`). Raw
    /// memory, so the mask walk's lookups are plain loads.
    @exclusivity(unchecked) var transitions: UnsafeMutablePointer<Int32>
    @exclusivity(unchecked) var transitionStates = 64
    /// The state the output so far leads to.
    @exclusivity(unchecked) var current: Int32 = 0
    /// The state being built by `close`.
    @exclusivity(unchecked) var scratch: [Int32] = []
    /// The walk's state per trie depth.
    @exclusivity(unchecked) var levelState: [Int32] = []

    // Mask cache: `maskSlot[state]` is a slot of `maskBits` (or -1); slots are reused round robin.
    @exclusivity(unchecked) var maskSlot: [Int32] = []
    @exclusivity(unchecked) var slotState: [Int32]
    @exclusivity(unchecked) var maskBits: UnsafeMutableBufferPointer<UInt64>
    @exclusivity(unchecked) var maskWords = 0
    @exclusivity(unchecked) var nextSlot = 0
    static let maskSlots = 32

    // Counted units (see `GrammarMatcher+Units.swift`): per state, the index in `grammar.units`
    // of the unit it is counting (-2 not known yet, -1 none) and how many more units it allows.
    @exclusivity(unchecked) var stateUnit: [Int32] = []
    @exclusivity(unchecked) var stateBudget: [Int32] = []
    /// Per unit of the grammar, its table for the trie `unitTrie` (looked up once).
    @exclusivity(unchecked) var unitTables: [UnitTable?] = []
    @exclusivity(unchecked) var unitLooked: [Bool] = []
    @exclusivity(unchecked) var unitTrie: ObjectIdentifier? = nil
    /// The counted walk's per-depth state: a matcher state, or -1 while inside whole units
    /// (then the unit automaton's state and the units completed).
    @exclusivity(unchecked) var levelUnitState: [Int32] = []
    @exclusivity(unchecked) var levelUnits: [Int32] = []
    /// The states after 0, 1, 2, … units from the state being masked.
    @exclusivity(unchecked) var advanced: [Int32] = []

    /// Past these sizes the memory is flushed (the current state is kept).
    static let maxNodes = 1 << 20
    static let maxStates = 1 << 15

    /// Whether `accept` may flush the memory past its bounds (not when generations share it:
    /// their state ids must stay valid; see `GrammarConstraint`).
    let flushes: Bool

    public init(grammar: CompiledGrammar, flushes: Bool = true) {
        self.grammar = grammar
        self.flushes = flushes
        buckets = [Int32](repeating: -1, count: 1 << 12)
        bucketMask = (1 << 12) - 1
        stateBuckets = [Int32](repeating: -1, count: 1 << 10)
        stateBucketMask = (1 << 10) - 1
        slotState = [Int32](repeating: -1, count: Self.maskSlots)
        maskBits = .allocate(capacity: 0)
        transitions = .allocate(capacity: 64 * 256)
        reset()
    }

    deinit {
        maskBits.deallocate()
        transitions.deallocate()
    }

    /// Back to the start of the grammar (what was learnt about states is kept).
    public func reset() {
        if stateAccepting.isEmpty {
            epoch &+= 1
            scratch.removeAll(keepingCapacity: true)
            var accepting = false
            let r = grammar.root
            for a in grammar.alternatives[Int(grammar.ruleStart[Int(r)])..<Int(grammar.ruleEnd[Int(r)])] {
                close(a, parent: -1, accepting: &accepting)
            }
            _ = intern(accepting: accepting)
        }
        current = 0
    }

    /// The output so far is a complete match (end of generation may come now).
    public var canEnd: Bool { stateAccepting[Int(current)] }
    /// No byte can come next: the output is complete and must end.
    public var mustEnd: Bool { stateStart[Int(current)] == stateStart[Int(current) + 1] }

    // MARK: - Arena

    @inline(__always)
    static func mix(_ a: Int32, _ b: Int32) -> Int {
        let h = (UInt32(bitPattern: a) &* 0x9E37_79B1) ^ (UInt32(bitPattern: b) &* 0x2C1B_3C6D)
        return Int(truncatingIfNeeded: h ^ (h >> 15))
    }

    @inline(__always)
    func node(_ position: Int32, _ parent: Int32) -> Int32 {
        let b = Self.mix(position, parent) & bucketMask
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
        if nodePosition.count > buckets.count * 2 { rehashNodes(buckets.count * 4) }
        return id
    }

    func rehashNodes(_ size: Int) {
        buckets = [Int32](repeating: -1, count: size)
        bucketMask = size - 1
        for id in 0..<nodePosition.count {
            let b = Self.mix(nodePosition[id], nodeParent[id]) & bucketMask
            nodeNext[id] = buckets[b]
            buckets[b] = Int32(id)
        }
    }

    // MARK: - Closure

    /// Adds to `scratch` every stack that continues at `position` under `parent`, expanded until
    /// each top is a terminal. Reaching the end of the root sets `accepting`.
    func close(_ position: Int32, parent: Int32, accepting: inout Bool) {
        let id = node(position, parent)
        if nodeStamp[Int(id)] == epoch { return }
        nodeStamp[Int(id)] = epoch
        switch grammar.kinds[Int(position)] {
        case .terminal:
            scratch.append(id)
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

    // MARK: - States

    /// The id of the state in `scratch` (sorted here), made if new.
    func intern(accepting: Bool) -> Int32 {
        // Insertion sort: states are small, and this allocates nothing.
        if scratch.count > 1 {
            for k in 1..<scratch.count {
                let v = scratch[k]
                var j = k - 1
                while j >= 0 && scratch[j] > v {
                    scratch[j + 1] = scratch[j]
                    j -= 1
                }
                scratch[j + 1] = v
            }
        }
        var h = accepting ? 0x51_7CC1 : 0x2545_F491
        for t in scratch { h = (h &* 31) ^ Self.mix(t, 0x5BD1) }
        let b = h & stateBucketMask
        var s = stateBuckets[b]
        while s >= 0 {
            let start = Int(stateStart[Int(s)])
            let end = Int(stateStart[Int(s) + 1])
            if stateAccepting[Int(s)] == accepting && end - start == scratch.count {
                var same = true
                for k in 0..<scratch.count where stateTops[start + k] != scratch[k] {
                    same = false
                    break
                }
                if same { return s }
            }
            s = stateNext[Int(s)]
        }
        let id = Int32(stateAccepting.count)
        stateTops.append(contentsOf: scratch)
        stateStart.append(Int32(stateTops.count))
        stateAccepting.append(accepting)
        stateNext.append(stateBuckets[b])
        stateBuckets[b] = id
        if Int(id) >= transitionStates {
            let grown = UnsafeMutablePointer<Int32>.allocate(capacity: transitionStates * 2 * 256)
            grown.update(from: transitions, count: transitionStates * 256)
            transitions.deallocate()
            transitions = grown
            transitionStates *= 2
        }
        initializeRow(id)
        maskSlot.append(-1)
        stateUnit.append(-2)
        stateBudget.append(0)
        if stateAccepting.count > stateBuckets.count * 2 { rehashStates(stateBuckets.count * 4) }
        return id
    }

    func rehashStates(_ size: Int) {
        stateBuckets = [Int32](repeating: -1, count: size)
        stateBucketMask = size - 1
        for s in 0..<stateAccepting.count {
            var h = stateAccepting[s] ? 0x51_7CC1 : 0x2545_F491
            for k in Int(stateStart[s])..<Int(stateStart[s + 1]) { h = (h &* 31) ^ Self.mix(stateTops[k], 0x5BD1) }
            let b = h & stateBucketMask
            stateNext[s] = stateBuckets[b]
            stateBuckets[b] = Int32(s)
        }
    }

    /// Sets the new state `s`'s row of `transitions`: -1 for the bytes none of its tops takes
    /// (`computeStep` would find no stack to advance), -2 (compute when met) for the others.
    /// Why: a mask walk meets most of the 256 bytes at the trie's first level in every state it
    /// masks, and a tool grammar's states are new at almost every token (one copy per tool, per
    /// whitespace count, per string length), so a closure per rejected byte was most of a mask.
    func initializeRow(_ s: Int32) {
        var taken: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for k in Int(stateStart[Int(s)])..<Int(stateStart[Int(s) + 1]) {
            let set = Int(grammar.arguments[Int(nodePosition[Int(stateTops[k])])]) &* 4
            taken.0 |= grammar.sets[set]
            taken.1 |= grammar.sets[set + 1]
            taken.2 |= grammar.sets[set + 2]
            taken.3 |= grammar.sets[set + 3]
        }
        let row = transitions + Int(s) * 256
        func fill(_ bits: UInt64, from first: Int) {
            for b in 0..<64 { (row + first + b).initialize(to: bits >> UInt64(b) & 1 != 0 ? -2 : -1) }
        }
        fill(taken.0, from: 0)
        fill(taken.1, from: 64)
        fill(taken.2, from: 128)
        fill(taken.3, from: 192)
    }

    /// The state after `byte` from state `s` (-1: none), computed once.
    @inline(__always)
    func step(_ s: Int32, _ byte: UInt8) -> Int32 {
        let t = transitions[Int(s) &* 256 &+ Int(byte)]
        if t != -2 { return t }
        return computeStep(s, byte)
    }

    func computeStep(_ s: Int32, _ byte: UInt8) -> Int32 {
        epoch &+= 1
        scratch.removeAll(keepingCapacity: true)
        var accepting = false
        for k in Int(stateStart[Int(s)])..<Int(stateStart[Int(s) + 1]) {
            let top = stateTops[k]
            let position = nodePosition[Int(top)]
            if grammar.terminal(position, matches: byte) {
                close(position + 1, parent: nodeParent[Int(top)], accepting: &accepting)
            }
        }
        let r = scratch.isEmpty && !accepting ? -1 : intern(accepting: accepting)
        transitions[Int(s) &* 256 &+ Int(byte)] = r
        return r
    }

    /// Advances the current state over `bytes`; false (and the state unchanged) when they do
    /// not continue a match.
    @discardableResult
    public func accept<C: Collection<UInt8>>(bytes: C) -> Bool {
        var s = current
        for b in bytes {
            s = step(s, b)
            if s < 0 { return false }
        }
        current = s
        if flushes && isOverLimit { flush() }
        return true
    }

    /// Grown past the memory it should keep.
    var isOverLimit: Bool { nodePosition.count > Self.maxNodes || stateAccepting.count > Self.maxStates }

    /// Forgets every state but the current one (rebuilt first in a fresh arena).
    func flush() {
        var chains: [[Int32]] = []
        for k in Int(stateStart[Int(current)])..<Int(stateStart[Int(current) + 1]) {
            var chain: [Int32] = []
            var n = stateTops[k]
            while n >= 0 {
                chain.append(nodePosition[Int(n)])
                n = nodeParent[Int(n)]
            }
            chains.append(chain)
        }
        let accepting = stateAccepting[Int(current)]
        nodePosition.removeAll(keepingCapacity: true)
        nodeParent.removeAll(keepingCapacity: true)
        nodeNext.removeAll(keepingCapacity: true)
        nodeStamp.removeAll(keepingCapacity: true)
        for i in buckets.indices { buckets[i] = -1 }
        stateTops.removeAll(keepingCapacity: true)
        stateStart = [0]
        stateAccepting.removeAll(keepingCapacity: true)
        stateNext.removeAll(keepingCapacity: true)
        for i in stateBuckets.indices { stateBuckets[i] = -1 }
        maskSlot.removeAll(keepingCapacity: true)
        stateUnit.removeAll(keepingCapacity: true)
        stateBudget.removeAll(keepingCapacity: true)
        for i in slotState.indices { slotState[i] = -1 }
        // The start state is state 0 again, then the current one.
        let saved = current
        _ = saved
        reset()
        scratch.removeAll(keepingCapacity: true)
        for chain in chains {
            var parent: Int32 = -1
            for position in chain.reversed() { parent = node(position, parent) }
            scratch.append(parent)
        }
        current = intern(accepting: accepting)
    }

    // MARK: - Saved states (tests and references)

    /// The current state, to come back to with `restore`.
    public struct Snapshot: Sendable, Equatable {
        var state: Int32
    }

    public func snapshot() -> Snapshot { Snapshot(state: current) }

    /// Returns to a snapshot taken from this matcher (not valid across a flush).
    public func restore(_ s: Snapshot) { current = s.state }
}
