import Foundation

/// A GGUF model file (versions 2 and 3), memory-mapped read-only.
///
/// The header, metadata and tensor table are parsed and checked at open; tensor data is
/// never copied: `tensorData(_:)` hands out views into `mapping`, valid while it lives (a model
/// keeps the mapping, not this object, so the parsed metadata can go once it has loaded).
public final class GGUFFile: @unchecked Sendable {
    public static let magic: UInt32 = 0x4655_4747  // "GGUF" read little-endian
    public static let defaultAlignment = 32

    public let path: String
    public let version: UInt32
    public let metadata: [String: GGUFValue]
    /// Metadata keys in file order.
    public let metadataKeys: [String]
    public let tensors: [String: GGUFTensorInfo]
    /// Tensor names in file order.
    public let tensorNames: [String]
    public let alignment: Int
    public let fileSize: Int

    let mapping: GGUFMapping

    public init(path: String) throws(GGUFError) {
        self.path = path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .cannotOpen(path: path, reason: "not a regular file") }
        let size = Int(st.st_size)
        guard size >= 4 else { throw .truncated(what: "magic", offset: 0) }
        guard let mapping = GGUFMapping(fd: fd, size: size) else {
            throw .cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        let parsed = try GGUFParser.parse(mapping.bytes)
        self.version = parsed.version
        self.metadata = parsed.metadata
        self.metadataKeys = parsed.metadataKeys
        self.tensors = parsed.tensors
        self.tensorNames = parsed.tensorNames
        self.alignment = parsed.alignment
        self.mapping = mapping
        self.fileSize = size
    }

    /// The raw bytes of a tensor, a view into the mapping.
    public func tensorData(_ name: String) throws(GGUFError) -> UnsafeRawBufferPointer {
        guard let info = tensors[name] else { throw .missingTensor(name) }
        return UnsafeRawBufferPointer(rebasing: mapping.bytes[info.offset..<(info.offset + info.byteCount)])
    }

    public func tensor(_ name: String) throws(GGUFError) -> GGUFTensorInfo {
        guard let info = tensors[name] else { throw .missingTensor(name) }
        return info
    }

    // MARK: Typed metadata access

    public func value(_ key: String) throws(GGUFError) -> GGUFValue {
        guard let v = metadata[key] else { throw .missingKey(key) }
        return v
    }

    public func string(_ key: String) throws(GGUFError) -> String {
        let v = try value(key)
        guard let s = v.stringValue else { throw .wrongKeyType(key: key, expected: "string", found: v.typeName) }
        return s
    }

    public func optionalString(_ key: String) -> String? { metadata[key]?.stringValue }

    public func int(_ key: String) throws(GGUFError) -> Int {
        let v = try value(key)
        guard let i = v.intValue else { throw .wrongKeyType(key: key, expected: "integer", found: v.typeName) }
        return i
    }

    public func optionalInt(_ key: String) -> Int? { metadata[key]?.intValue }

    public func float(_ key: String) throws(GGUFError) -> Float {
        let v = try value(key)
        guard let d = v.doubleValue else { throw .wrongKeyType(key: key, expected: "number", found: v.typeName) }
        return Float(d)
    }

    public func optionalFloat(_ key: String) -> Float? { metadata[key]?.doubleValue.map(Float.init) }

    public func bool(_ key: String) throws(GGUFError) -> Bool {
        let v = try value(key)
        guard case .bool(let b) = v else { throw .wrongKeyType(key: key, expected: "bool", found: v.typeName) }
        return b
    }

    public func optionalBool(_ key: String) -> Bool? {
        if case .bool(let b)? = metadata[key] { return b }
        return nil
    }

    public func stringArray(_ key: String) throws(GGUFError) -> [String] {
        let v = try value(key)
        guard let items = v.arrayValue else {
            throw .wrongKeyType(key: key, expected: "array of string", found: v.typeName)
        }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let s = item.stringValue else {
                throw .wrongKeyType(key: key, expected: "array of string", found: "array of \(item.typeName)")
            }
            out.append(s)
        }
        return out
    }

    public func int32Array(_ key: String) throws(GGUFError) -> [Int32] {
        let v = try value(key)
        guard let items = v.arrayValue else {
            throw .wrongKeyType(key: key, expected: "array of integer", found: v.typeName)
        }
        var out: [Int32] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let i = item.intValue, let i32 = Int32(exactly: i) else {
                throw .wrongKeyType(key: key, expected: "array of int32", found: "array of \(item.typeName)")
            }
            out.append(i32)
        }
        return out
    }

    /// `general.architecture`, the key every GGUF model must carry.
    public var architecture: String {
        get throws(GGUFError) { try string("general.architecture") }
    }
}
