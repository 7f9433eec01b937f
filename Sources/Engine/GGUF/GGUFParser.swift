/// Parses the header, metadata and tensor table of a GGUF file held in memory.
/// Every read is bounds-checked: a damaged file gives a `GGUFError`, never a crash.
package struct GGUFParser {
    package struct Parsed {
        package var version: UInt32
        package var metadata: [String: GGUFValue]
        package var metadataKeys: [String]
        package var tensors: [String: GGUFTensorInfo]
        package var tensorNames: [String]
        package var alignment: Int
    }

    /// Far more than any real file has; guards against absurd counts in damaged headers.
    static let maxCount = 1 << 24
    static let maxDimensions = 4

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(GGUFError) -> Parsed {
        var p = GGUFParser(bytes)
        return try p.parseAll()
    }

    private mutating func parseAll() throws(GGUFError) -> Parsed {
        let magic: UInt32 = try read("magic")
        guard magic == GGUFFile.magic else { throw .badMagic(found: magic) }
        let version: UInt32 = try read("version")
        guard version == 2 || version == 3 else { throw .unsupportedVersion(version) }
        let tensorCount = try readCount("tensor count")
        let kvCount = try readCount("metadata count")

        var metadata: [String: GGUFValue] = [:]
        var keys: [String] = []
        for _ in 0..<kvCount {
            let key = try readString()
            let code: UInt32 = try read("type of \(key)")
            metadata[key] = try readValue(code: code, key: key)
            keys.append(key)
        }

        var alignment = GGUFFile.defaultAlignment
        if let a = metadata["general.alignment"] {
            guard let v = a.intValue, v > 0, v & (v - 1) == 0 else {
                throw .wrongKeyType(key: "general.alignment", expected: "power of two", found: "\(a)")
            }
            alignment = v
        }

        struct RawTensor {
            var name: String
            var shape: [Int]
            var type: GGMLType
            var relativeOffset: Int
        }
        var raw: [RawTensor] = []
        for _ in 0..<tensorCount {
            let name = try readString()
            let dims: UInt32 = try read("dimension count of \(name)")
            guard dims >= 1, dims <= Self.maxDimensions else {
                throw .badTensorShape(tensor: name, reason: "\(dims) dimensions")
            }
            var shape: [Int] = []
            for _ in 0..<dims {
                let d: UInt64 = try read("shape of \(name)")
                guard d > 0, d < UInt64(1 << 40) else { throw .badTensorShape(tensor: name, reason: "dimension \(d)") }
                shape.append(Int(d))
            }
            let code: UInt32 = try read("type of \(name)")
            guard let type = GGMLType(rawValue: code) else { throw .unknownTensorType(tensor: name, code: code) }
            let rel: UInt64 = try read("offset of \(name)")
            guard rel < UInt64(bytes.count) else {
                throw .tensorOutOfBounds(tensor: name, end: Int(clamping: rel), fileSize: bytes.count)
            }
            raw.append(RawTensor(name: name, shape: shape, type: type, relativeOffset: Int(rel)))
        }

        let dataStart = (offset + alignment - 1) / alignment * alignment
        var tensors: [String: GGUFTensorInfo] = [:]
        var names: [String] = []
        for t in raw {
            guard tensors[t.name] == nil else { throw .duplicateTensor(t.name) }
            guard let rowBytes = t.type.rowBytes(elements: t.shape[0]) else {
                throw .badTensorShape(
                    tensor: t.name,
                    reason: "row of \(t.shape[0]) is not a multiple of \(t.type)'s block of \(t.type.blockSize)")
            }
            let (rows, overflow1) = t.shape.dropFirst().reduce((1, false)) { acc, d in
                let (v, o) = acc.0.multipliedReportingOverflow(by: d)
                return (v, acc.1 || o)
            }
            let (byteCount, overflow2) = rowBytes.multipliedReportingOverflow(by: rows)
            let start = dataStart + t.relativeOffset
            guard !overflow1, !overflow2, start + byteCount <= bytes.count else {
                throw .tensorOutOfBounds(tensor: t.name, end: start &+ byteCount, fileSize: bytes.count)
            }
            guard t.relativeOffset % alignment == 0 else {
                throw .badTensorShape(
                    tensor: t.name, reason: "offset \(t.relativeOffset) is not aligned to \(alignment)")
            }
            tensors[t.name] = GGUFTensorInfo(
                name: t.name, shape: t.shape, type: t.type, offset: start, byteCount: byteCount)
            names.append(t.name)
        }
        return Parsed(
            version: version, metadata: metadata, metadataKeys: keys, tensors: tensors, tensorNames: names,
            alignment: alignment)
    }

    // MARK: Primitive reads

    private mutating func read<T: FixedWidthInteger>(_ what: @autoclosure () -> String) throws(GGUFError) -> T {
        let size = MemoryLayout<T>.size
        guard offset + size <= bytes.count else { throw .truncated(what: what(), offset: offset) }
        let v = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += size
        return v
    }

    private mutating func readCount(_ what: String) throws(GGUFError) -> Int {
        let v: UInt64 = try read(what)
        guard v <= UInt64(Self.maxCount) else { throw .truncated(what: "\(what) of \(v)", offset: offset - 8) }
        return Int(v)
    }

    private mutating func readString() throws(GGUFError) -> String {
        let start = offset
        let length: UInt64 = try read("string length")
        guard length <= UInt64(bytes.count - offset) else { throw .truncated(what: "string", offset: start) }
        let n = Int(length)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
        offset += n
        guard let s = String(validating: slice, as: UTF8.self) else { throw .invalidString(offset: start) }
        return s
    }

    private mutating func readValue(code: UInt32, key: String) throws(GGUFError) -> GGUFValue {
        switch code {
        case 0: return .uint8(try read(key))
        case 1: return .int8(try read(key))
        case 2: return .uint16(try read(key))
        case 3: return .int16(try read(key))
        case 4: return .uint32(try read(key))
        case 5: return .int32(try read(key))
        case 6: return .float32(Float(bitPattern: try read(key)))
        case 7:
            let b: UInt8 = try read(key)
            return .bool(b != 0)
        case 8: return .string(try readString())
        case 9:
            let elementCode: UInt32 = try read("array type of \(key)")
            guard elementCode != 9 else { throw .unknownValueType(key: key, code: 9) }
            let count = try readCount("array length of \(key)")
            var items: [GGUFValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count {
                items.append(try readValue(code: elementCode, key: key))
            }
            return .array(items)
        case 10: return .uint64(try read(key))
        case 11: return .int64(try read(key))
        case 12: return .float64(Double(bitPattern: try read(key)))
        default: throw .unknownValueType(key: key, code: code)
        }
    }
}
