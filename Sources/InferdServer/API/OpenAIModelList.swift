/// `GET /v1/models`: the one served model, with its context length (an extension field).
struct OpenAIModelList: Encodable, Sendable {
    struct Model: Encodable, Sendable {
        var id: String
        var object = "model"
        var created: Int
        var ownedBy = "inferd"
        var contextLength: Int

        enum CodingKeys: String, CodingKey {
            case id, object, created
            case ownedBy = "owned_by"
            case contextLength = "context_length"
        }
    }

    var object = "list"
    var data: [Model]
}
