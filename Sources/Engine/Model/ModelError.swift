/// Why a model could not be loaded or run. Messages name the tensor, key or type involved.
public enum ModelError: Error, Equatable, CustomStringConvertible {
    case unsupportedArchitecture(String)
    case missingMetadata(key: String)
    case invalidHyperParameter(String)
    case missingTensor(String)
    case wrongShape(tensor: String, expected: [Int], actual: [Int])
    case unsupportedTensorType(tensor: String, type: GGMLType)
    case cacheOverflow(count: Int, adding: Int, capacity: Int)
    case cacheCapacityTooLarge(requested: Int, contextLength: Int)
    case invalidToken(Int32, vocabularySize: Int)
    case logitsBufferTooSmall(count: Int, needed: Int)
    case cacheFromAnotherModel
    case unsupportedKVCacheType(String, reason: String)
    /// A part of a file of a supported family that the engine does not compute (named).
    case unsupported(String)

    public var description: String {
        switch self {
        case .unsupportedArchitecture(let a):
            "unsupported architecture '\(a)' (supported: \(Architecture.supported.map(\.name).joined(separator: ", ")))"
        case .missingMetadata(let key): "missing metadata key '\(key)'"
        case .invalidHyperParameter(let what): "invalid hyper-parameter: \(what)"
        case .missingTensor(let name): "missing tensor '\(name)'"
        case .wrongShape(let name, let expected, let actual):
            "tensor '\(name)' has shape \(actual), expected \(expected)"
        case .unsupportedTensorType(let name, let type): "tensor '\(name)' has unsupported type \(type)"
        case .cacheOverflow(let count, let adding, let capacity):
            "KV cache overflow: \(count) + \(adding) tokens > capacity \(capacity)"
        case .cacheCapacityTooLarge(let requested, let context):
            "KV cache capacity \(requested) exceeds the context length \(context)"
        case .invalidToken(let t, let vocab): "token id \(t) outside the vocabulary 0..<\(vocab)"
        case .logitsBufferTooSmall(let count, let needed): "logits buffer holds \(count) floats, needs \(needed)"
        case .cacheFromAnotherModel: "KV cache was made by a model of different shape"
        case .unsupportedKVCacheType(let type, let reason): "kv_cache_type \(type) does not fit this model: \(reason)"
        case .unsupported(let what): "unsupported: \(what)"
        }
    }
}
