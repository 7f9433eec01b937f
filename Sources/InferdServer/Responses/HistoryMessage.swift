/// One message of a chain's history (what `previous_response_id` continues): its role as the
/// chat template knows it and its text. Instructions are never part of it.
struct HistoryMessage: Codable, Sendable, Equatable {
    var role: String
    var content: String
}
