/// Buffers of a mixture-of-experts feed-forward step, allocated once with the model (a pass
/// allocates nothing). Sized for `rows` token rows (a pass's most) of a model with `experts`
/// experts of which each row uses `used`, `width` wide.
final class ExpertScratch {
    /// Compact row i: the pass row it is, its segment, its CK_ORDER_* flags. [rows]
    let rows: UnsafeMutablePointer<Int>
    let segments: UnsafeMutablePointer<Int>
    let rowOrders: UnsafeMutablePointer<UInt8>
    /// The compact rows' normed inputs when not every pass row takes part, [rows × width].
    let input: UnsafeMutablePointer<Float>
    /// Router logits [rows × experts]; one row's probabilities [experts].
    let logits: UnsafeMutablePointer<Float>
    let probabilities: UnsafeMutablePointer<Float>
    /// Chosen experts and their weights, [rows × used] (slot a = i · used + j).
    let ids: UnsafeMutablePointer<Int32>
    let weights: UnsafeMutablePointer<Float>
    /// Per expert: how many slots chose it, where its slots start in `slots`. [experts + 1]
    let counts: UnsafeMutablePointer<Int>
    let starts: UnsafeMutablePointer<Int>
    /// Slots grouped by expert, each expert's in row order. [rows × used]
    let slots: UnsafeMutablePointer<Int>
    /// One expert's rows: their CK_ORDER_* flags [rows], inputs and outputs [rows × width].
    let expertOrders: UnsafeMutablePointer<UInt8>
    let gathered: UnsafeMutablePointer<Float>
    let expertDown: UnsafeMutablePointer<Float>
    /// Every slot's expert output, [rows × used × width].
    let slotOutputs: UnsafeMutablePointer<Float>
    /// The weighted sums of the compact rows, [rows × width].
    let combined: UnsafeMutablePointer<Float>
    private var allocations: [UnsafeMutableRawPointer] = []

    init(rows: Int, experts: Int, used: Int, width: Int) {
        var allocations: [UnsafeMutableRawPointer] = []
        func buffer<T>(_ type: T.Type, _ count: Int) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: max(1, count))
            allocations.append(UnsafeMutableRawPointer(p))
            return p
        }
        self.rows = buffer(Int.self, rows)
        segments = buffer(Int.self, rows)
        rowOrders = buffer(UInt8.self, rows)
        input = buffer(Float.self, rows * width)
        logits = buffer(Float.self, rows * experts)
        probabilities = buffer(Float.self, experts)
        ids = buffer(Int32.self, rows * used)
        weights = buffer(Float.self, rows * used)
        counts = buffer(Int.self, experts + 1)
        starts = buffer(Int.self, experts + 1)
        slots = buffer(Int.self, rows * used)
        expertOrders = buffer(UInt8.self, rows)
        gathered = buffer(Float.self, rows * width)
        expertDown = buffer(Float.self, rows * width)
        slotOutputs = buffer(Float.self, rows * used * width)
        combined = buffer(Float.self, rows * width)
        self.allocations = allocations
    }

    deinit {
        for p in allocations { p.deallocate() }
    }
}
