import Foundation

/// What the model's weights take: all of them, and what one token's pass reads (less than all
/// with a mixture of experts, where a token reads its `used` experts of each layer).
extension LlamaModel {
    /// Bytes of every weight matrix as the file stores them: the layers' matrices (every expert
    /// of each), the token embedding and the output head (once when they are the same tensor).
    /// Norm vectors are left out (a few KB).
    public var weightBytes: Int {
        var total = tokenEmbedding.matrix.fileBytes
        if output.name != tokenEmbedding.matrix.name { total += output.fileBytes }
        for layer in layers { total += layer.matrices.reduce(0) { $0 + $1.fileBytes } }
        return total
    }

    /// Bytes of weights one decoding token's pass reads: the attention matrices, the dense
    /// feed-forward or the router and `used` experts' three matrices of each layer, the output
    /// head and one embedding row. The speed a memory bandwidth allows is that over this.
    public var activeWeightBytesPerToken: Int {
        var total = tokenEmbedding.matrix.rowBytes + output.fileBytes
        for layer in layers {
            total += [layer.wq, layer.wk, layer.wv, layer.wo].reduce(0) { $0 + $1.fileBytes }
            switch layer.feedForward {
            case .dense(let gate, let up, let down): total += gate.fileBytes + up.fileBytes + down.fileBytes
            case .experts(let experts): total += experts.fileBytes(experts: experts.used)
            }
        }
        return total
    }

    /// Bytes of the matrices products read in place from the file mapping: the token embedding
    /// (looked up there even when a tied output head reads a copy) and every matrix left without
    /// a copy.
    public var mappedWeightBytes: Int {
        var total = tokenEmbedding.matrix.fileBytes
        if output.name != tokenEmbedding.matrix.name && !output.isCopied { total += output.fileBytes }
        for layer in layers {
            total += layer.matrices.reduce(0) { $0 + ($1.isCopied ? 0 : $1.fileBytes) }
        }
        return total
    }

    /// The weights' memory: copied at load, read in place, read per token.
    public var weightResidency: WeightResidency {
        WeightResidency(
            copies: weightCopies, totalBytes: weightBytes, copiedBytes: copiedWeightBytes,
            mappedBytes: mappedWeightBytes, activeBytesPerToken: activeWeightBytesPerToken)
    }

    /// The machine's physical memory (sysconf), from which the load decides what to copy.
    public static var physicalMemoryBytes: Int {
        Int(sysconf(Int32(_SC_PHYS_PAGES))) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
