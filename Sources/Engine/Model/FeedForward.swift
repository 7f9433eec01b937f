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

    /// Runs `body` on every weight matrix of the block in place (the interleaver's copies); the
    /// experts' own matrices only when `experts` (the router is the block's own either way).
    mutating func updateMatrices(experts includeExperts: Bool = true, _ body: (inout WeightMatrix) -> Void) {
        switch self {
        case .dense(var gate, var up, var down):
            body(&gate)
            body(&up)
            body(&down)
            self = .dense(gate: gate, up: up, down: down)
        case .experts(var experts):
            if includeExperts {
                experts.updateMatrices(body)
            } else {
                body(&experts.router)
            }
            self = .experts(experts)
        }
    }

    /// The experts' matrices (each expert's three), none for a dense block.
    var expertMatrices: [WeightMatrix] {
        guard case .experts(let experts) = self else { return [] }
        return experts.gate + experts.up + experts.down
    }

    /// The dense block's matrices, nil for experts.
    var dense: (gate: WeightMatrix, up: WeightMatrix, down: WeightMatrix)? {
        guard case .dense(let gate, let up, let down) = self else { return nil }
        return (gate, up, down)
    }
}
