import CKernels

extension Architecture {
    /// How a mixture-of-experts feed-forward weighs its experts: the router's logits to
    /// probabilities, the `{arch}.expert_used_count` most probable experts taken, their
    /// probabilities as the weights of their outputs (llama.cpp's `build_moe_ffn`).
    public struct ExpertGating: Sendable, Equatable {
        public enum Probabilities: Sendable, Equatable {
            /// Softmax over all experts (Qwen 3 MoE).
            case softmax
            /// Each expert's sigmoid on its own.
            case sigmoid
            /// The raw logits choose the experts; the softmax of the chosen ones weighs them
            /// (llama.cpp's SOFTMAX_WEIGHT, gpt-oss).
            case softmaxOfChosen
        }

        public let probabilities: Probabilities
        /// The chosen experts' weights divided by their sum (llama.cpp's `norm_w`).
        public let normalizesChosen: Bool

        /// `gating` of `ck_moe_route`.
        var kernelGating: Int32 {
            switch probabilities {
            case .softmax: Int32(CK_GATING_SOFTMAX)
            case .sigmoid: Int32(CK_GATING_SIGMOID)
            case .softmaxOfChosen: Int32(CK_GATING_SOFTMAX_WEIGHT)
            }
        }
    }
}
