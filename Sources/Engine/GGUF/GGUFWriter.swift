import Foundation

/// Builds GGUF (version 3) files: used by tests to make tiny models and damaged files,
/// and by tooling. Tensor data is given already encoded in the tensor's type.
public struct GGUFWriter {
    public struct Tensor {
        public var name: String
        public var shape: [Int]
        public var type: GGMLType
        public var data: [UInt8]
    }

    public var version: UInt32 = 3
    public var alignment = GGUFFile.defaultAlignment
    public private(set) var metadata: [(String, GGUFValue)] = []
    public private(set) var tensors: [Tensor] = []

    public init() {}

    public mutating func add(_ key: String, _ value: GGUFValue) {
        metadata.removeAll { $0.0 == key }
        metadata.append((key, value))
    }

    public mutating func addTensor(name: String, shape: [Int], type: GGMLType, data: [UInt8]) {
        tensors.append(Tensor(name: name, shape: shape, type: type, data: data))
    }

    /// Adds an F32 tensor from floats.
    public mutating func addTensor(name: String, shape: [Int], floats: [Float]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(floats.count * 4)
        for f in floats { withUnsafeBytes(of: f.bitPattern.littleEndian) { bytes.append(contentsOf: $0) } }
        addTensor(name: name, shape: shape, type: .f32, data: bytes)
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
        func putString(_ s: String) {
            put(UInt64(s.utf8.count))
            out.append(contentsOf: s.utf8)
        }
        func putValue(_ v: GGUFValue) {
            switch v {
            case .uint8(let x): put(x)
            case .int8(let x): put(x)
            case .uint16(let x): put(x)
            case .int16(let x): put(x)
            case .uint32(let x): put(x)
            case .int32(let x): put(x)
            case .uint64(let x): put(x)
            case .int64(let x): put(x)
            case .float32(let x): put(x.bitPattern)
            case .float64(let x): put(x.bitPattern)
            case .bool(let x): put(UInt8(x ? 1 : 0))
            case .string(let s): putString(s)
            case .array(let items):
                put(items.first?.typeCode ?? 0)
                put(UInt64(items.count))
                for item in items { putValue(item) }
            }
        }
        put(GGUFFile.magic)
        put(version)
        put(UInt64(tensors.count))
        put(UInt64(metadata.count))
        for (key, value) in metadata {
            putString(key)
            put(value.typeCode)
            putValue(value)
        }
        var relative = 0
        var offsets: [Int] = []
        for t in tensors {
            offsets.append(relative)
            relative += (t.data.count + alignment - 1) / alignment * alignment
        }
        for (t, off) in zip(tensors, offsets) {
            putString(t.name)
            put(UInt32(t.shape.count))
            for d in t.shape { put(UInt64(d)) }
            put(t.type.rawValue)
            put(UInt64(off))
        }
        while out.count % alignment != 0 { out.append(0) }
        for t in tensors {
            out.append(contentsOf: t.data)
            while out.count % alignment != 0 { out.append(0) }
        }
        return out
    }

    public func write(to path: String) throws {
        try Data(encoded()).write(to: URL(fileURLWithPath: path))
    }
}
