/// Buffers reused across the stretches of one `encode` call, so that encoding allocates little.
struct EncodingScratch {
    var scalars: [UInt32] = []
    var scalarOffsets: [Int] = []
    var words: [Range<Int>] = []
    var bytes: [UInt8] = []
    var bpe = BPEWorkspace()
    var spm = SPMWorkspace()
}
