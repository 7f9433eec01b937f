/// The feed-forward block of a layer, after its RMSNorm: one gated MLP for every token, or a
/// mixture of experts of which each token uses a few (`Architecture.expertGating`).
enum FeedForward {
    /// down(act(gate(x)) · up(x)).
    case dense(gate: WeightMatrix, up: WeightMatrix, down: WeightMatrix)
    /// Σ over the token's chosen experts e of weight_e · down_e(act(gate_e(x)) · up_e(x)).
    case experts(ExpertFeedForward)

    /// Every weight matrix of the block (each expert's three among them).
    var matrices: [WeightMatrix] {
        switch self {
        case .dense(let gate, let up, let down): [gate, up, down]
        case .experts(let experts): experts.matrices
        }
    }

    /// Runs `body` on every weight matrix of the block in place (the interleaver's copies).
    mutating func updateMatrices(_ body: (inout WeightMatrix) -> Void) {
        switch self {
        case .dense(var gate, var up, var down):
            body(&gate)
            body(&up)
            body(&down)
            self = .dense(gate: gate, up: up, down: down)
        case .experts(var experts):
            experts.updateMatrices(body)
            self = .experts(experts)
        }
    }

    /// The dense block's matrices, nil for experts.
    var dense: (gate: WeightMatrix, up: WeightMatrix, down: WeightMatrix)? {
        guard case .dense(let gate, let up, let down) = self else { return nil }
        return (gate, up, down)
    }
}
