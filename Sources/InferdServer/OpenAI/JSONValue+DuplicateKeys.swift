import StructuredOutput

/// Finding an object key given twice in a request body.
///
/// JSON leaves duplicate keys to the reader: most keep the last, some the first. A gateway in
/// front of inferd that checks the first `model` (or `stream`, or a key in a schema) while inferd
/// reads the last would let a body through that means something else here, so a body that gives
/// any key twice, at any depth, is refused.
extension JSONValue {
    /// One step of a path into a value: a member's key or an array's index.
    enum PathStep: Equatable {
        case key(String)
        case index(Int)
    }

    /// The path to the first member (in the order written) whose key its object already has, or
    /// nil. Keys are compared as Swift strings compare them, as the dictionaries the fields are read
    /// into do: two spellings of one canonical form (`"K"` and the Kelvin sign) are one key too.
    /// Recursion is bounded by `max_json_depth`, checked before the body is parsed.
    func firstDuplicateKey() -> [PathStep]? {
        switch self {
        case .object(let members):
            var seen = Set<String>(minimumCapacity: members.count)
            for member in members {
                guard seen.insert(member.key).inserted else { return [.key(member.key)] }
                if let inner = member.value.firstDuplicateKey() { return [.key(member.key)] + inner }
            }
            return nil
        case .array(let items):
            for (i, item) in items.enumerated() {
                if let inner = item.firstDuplicateKey() { return [.index(i)] + inner }
            }
            return nil
        default:
            return nil
        }
    }

    /// A path as errors name fields: `messages[1].content`.
    static func describe(_ path: [PathStep]) -> String {
        var out = ""
        for step in path {
            switch step {
            case .key(let k): out += out.isEmpty ? k : "." + k
            case .index(let i): out += "[\(i)]"
            }
        }
        return out
    }
}
