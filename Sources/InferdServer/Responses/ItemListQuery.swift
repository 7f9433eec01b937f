/// The query of OpenAI's item lists (a response's input items, a conversation's items): `after`,
/// `limit` and `order`, newest first unless `order=asc` (OpenAI's default, unlike the session
/// list's); `include` is each route's own. Refusals in OpenAI's error shape.
struct ItemListQuery: Sendable {
    var query: ListQuery

    init(_ parameters: [String: String]) throws(OpenAIError) {
        do {
            query = try ListQuery(parameters.filter { $0.key != "include" })
        } catch {
            throw OpenAIError(error)
        }
        if parameters["order"] == nil { query.order = .desc }
    }

    /// One page of `items`, in the list shape.
    func page(of items: [ResponseItem]) throws(OpenAIError) -> ListPage<ResponseItem> {
        do {
            let page = try query.page(of: items, id: \.id)
            return ListPage(data: page.items, hasMore: page.hasMore, id: \.id)
        } catch {
            throw OpenAIError(error)
        }
    }
}
