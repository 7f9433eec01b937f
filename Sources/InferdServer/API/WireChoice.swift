import HTTPServer

/// A policy named on the wire (`on_busy`, `priority`, …), as its enum.
enum WireChoice {
    /// `raw` as a `T`; an unknown name is a 400 naming the field and the allowed values.
    static func parse<T: RawRepresentable & CaseIterable>(_ raw: String, _ name: String, as: T.Type) throws(HTTPError)
        -> T
    where T.RawValue == String {
        guard let value = T(rawValue: raw) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw HTTPError.badRequest(
                "\(name) must be one of \(allowed), got \"\(raw)\"", code: .invalidRequest, param: name)
        }
        return value
    }
}
