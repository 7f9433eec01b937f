/// Request headers in arrival order; lookup is case-insensitive.
public struct HTTPHeaders: Sendable {
    public var all: [(String, String)]

    public init(_ all: [(String, String)] = []) { self.all = all }

    public subscript(name: String) -> String? {
        let lower = name.lowercased()
        return all.first { $0.0.lowercased() == lower }?.1
    }
}
