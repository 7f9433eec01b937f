import CKernels

extension Architecture.Activation {
    /// The activation's kind for `ck_rows_glu` (a `CK_GLU_*`).
    var kernelKind: Int32 {
        switch self {
        case .silu: Int32(CK_GLU_SILU)
        case .geluTanh: Int32(CK_GLU_GELU)
        case .swigluOAI: Int32(CK_GLU_SWIGLU_OAI)
        }
    }

    /// llama.cpp's name for the activation's output tensor (its `cb_eval` names, for tensor dumps).
    var tensorName: String {
        switch self {
        case .silu: "ffn_swiglu"
        case .geluTanh: "ffn_geglu"
        case .swigluOAI: "ffn_swiglu_oai"
        }
    }
}
