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
        }

        public let probabilities: Probabilities
        /// The chosen experts' weights divided by their sum (llama.cpp's `norm_w`).
        public let normalizesChosen: Bool

        /// `gating` of `ck_moe_route`.
        var kernelGating: Int32 { Int32(probabilities == .softmax ? CK_GATING_SOFTMAX : CK_GATING_SIGMOID) }
    }
}
