/// `GET /v1/models`: the one served model, with its context length, architecture and weight types
/// (extension fields).
struct OpenAIModelList: Encodable, Sendable {
    struct Model: Encodable, Sendable {
        var id: String
        var object = "model"
        var created: Int
        var ownedBy = "inferd"
        var contextLength: Int
        var architecture: String
        var weightTypes: [String]

        enum CodingKeys: String, CodingKey {
            case id, object, created, architecture
            case weightTypes = "weight_types"
            case ownedBy = "owned_by"
            case contextLength = "context_length"
        }
    }

    var object = "list"
    var data: [Model]
}
