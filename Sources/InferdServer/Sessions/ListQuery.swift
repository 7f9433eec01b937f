import HTTPServer

/// The query of a list endpoint, paged the way OpenAI's lists are: `limit` (default
/// `defaultLimit`, at most `maxLimit`), `after` (the id of the last item of the previous page),
/// `order` (`asc`, oldest first, the default; or `desc`). Any other parameter, or a bad value, is
/// a 400 naming it: a list must never be silently cut or silently unpaged.
struct ListQuery: Sendable, Equatable {
    static let defaultLimit = 20
    static let maxLimit = 100

    enum Order: String, Sendable, CaseIterable {
        case asc, desc
    }

    var limit = defaultLimit
    var after: String?
    var order = Order.asc

    init() {}

    init(_ query: [String: String]) throws(HTTPError) {
        if let unknown = query.keys.filter({ !["limit", "after", "order"].contains($0) }).sorted().first {
            throw .badRequest(
                "unknown query parameter '\(unknown)'; this list takes limit, after and order",
                code: .unknownParameter, param: unknown)
        }
        if let raw = query["limit"] {
            guard let n = Int(raw), n >= 1, n <= Self.maxLimit else {
                throw .badRequest(
                    "limit must be an integer from 1 to \(Self.maxLimit), got '\(raw)'", code: .invalidValue,
                    param: "limit")
            }
            limit = n
        }
        if let raw = query["after"] {
            guard !raw.isEmpty else {
                throw .badRequest("after must be the id of an item", code: .invalidValue, param: "after")
            }
            after = raw
        }
        if let raw = query["order"] {
            guard let o = Order(rawValue: raw) else {
                throw .badRequest("order must be asc or desc, got '\(raw)'", code: .invalidValue, param: "order")
            }
            order = o
        }
    }

    /// This query's page of `items` (given oldest first), and whether more follow it. An `after`
    /// that names no item is a 400: the caller's cursor is stale (the item was deleted) or wrong.
    func page<T>(of items: [T], id: (T) -> String) throws(HTTPError) -> (items: [T], hasMore: Bool) {
        let ordered = order == .asc ? items : items.reversed()
        var start = ordered.startIndex
        if let after {
            guard let i = ordered.firstIndex(where: { id($0) == after }) else {
                throw .badRequest(
                    "after names no item of this list: '\(after)'", code: .invalidValue, param: "after")
            }
            start = i + 1
        }
        let end = min(ordered.endIndex, start + limit)
        return (Array(ordered[start..<end]), end < ordered.endIndex)
    }
}

/// One page of a list: `{"data","first_id","has_more","last_id","object":"list"}` (ids null on an
/// empty page), as OpenAI's paged lists answer.
struct ListPage<Item: Encodable & Sendable>: Encodable, Sendable {
    var object = "list"
    var data: [Item]
    var firstId: String?
    var lastId: String?
    var hasMore: Bool

    init(data: [Item], hasMore: Bool, id: (Item) -> String) {
        self.data = data
        self.hasMore = hasMore
        firstId = data.first.map(id)
        lastId = data.last.map(id)
    }

    enum CodingKeys: String, CodingKey {
        case object, data
        case firstId = "first_id"
        case lastId = "last_id"
        case hasMore = "has_more"
    }

    /// Nulls are written, not left out, so a client can always read the cursor fields.
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(object, forKey: .object)
        try c.encode(data, forKey: .data)
        try c.encode(firstId, forKey: .firstId)
        try c.encode(lastId, forKey: .lastId)
        try c.encode(hasMore, forKey: .hasMore)
    }
}
