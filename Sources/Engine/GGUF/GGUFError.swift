/// Everything that can be wrong with a GGUF file, each naming what is wrong.
public enum GGUFError: Error, Equatable, CustomStringConvertible {
    case cannotOpen(path: String, reason: String)
    case badMagic(found: UInt32)
    case unsupportedVersion(UInt32)
    case truncated(what: String, offset: Int)
    case invalidString(offset: Int)
    case unknownValueType(key: String, code: UInt32)
    case unknownTensorType(tensor: String, code: UInt32)
    case badTensorShape(tensor: String, reason: String)
    case tensorOutOfBounds(tensor: String, end: Int, fileSize: Int)
    case duplicateTensor(String)
    case missingTensor(String)
    case missingKey(String)
    case wrongKeyType(key: String, expected: String, found: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open GGUF file \(path): \(reason)"
        case .badMagic(let found):
            "not a GGUF file: magic is 0x\(String(found, radix: 16)), expected 0x46554747 (\"GGUF\")"
        case .unsupportedVersion(let v): "unsupported GGUF version \(v) (supported: 2, 3)"
        case .truncated(let what, let offset): "GGUF file is truncated: \(what) at byte \(offset) runs past the end"
        case .invalidString(let offset): "GGUF string at byte \(offset) is not valid UTF-8"
        case .unknownValueType(let key, let code): "metadata key \(key) has unknown value type \(code)"
        case .unknownTensorType(let tensor, let code): "tensor \(tensor) has unknown tensor type \(code)"
        case .badTensorShape(let tensor, let reason): "tensor \(tensor) has a bad shape: \(reason)"
        case .tensorOutOfBounds(let tensor, let end, let size):
            "tensor \(tensor) ends at byte \(end), past the end of the file (\(size) bytes)"
        case .duplicateTensor(let name): "tensor \(name) appears twice"
        case .missingTensor(let name): "required tensor \(name) is missing"
        case .missingKey(let key): "required metadata key \(key) is missing"
        case .wrongKeyType(let key, let expected, let found): "metadata key \(key) is \(found), expected \(expected)"
        }
    }
}
