import Foundation

extension HTTPRequest {
    /// Decodes the body as JSON, mapping every failure to the `HTTPError` a client should see:
    /// 415 for a non-JSON Content-Type, 400 `missing_body`, 400 `invalid_json` (malformed,
    /// truncated or not UTF-8), 400 `json_too_deep` (nesting beyond `maxJSONDepth`, refused before
    /// the recursive decoder sees it), 400 `invalid_request` (a required field is missing) and 400
    /// `invalid_value` (valid JSON with a value of the wrong type or range, such as `3.5` where an
    /// integer goes); the last two name the field in `param`.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeChecked(type, try checkedJSONBody())
    }

    /// The body, once it is known to be JSON a parser may read: 415 for a non-JSON
    /// Content-Type, 400 `missing_body`, 400 `invalid_json` (not UTF-8), 400 `json_too_deep`.
    public func checkedJSONBody() throws -> [UInt8] {
        if body.isEmpty {
            throw HTTPError.badRequest("request body is required", code: .missingBody)
        }
        let contentType = headers["Content-Type"] ?? ""
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard mediaType == "application/json" else {
            throw HTTPError.unsupportedMediaType(
                "Content-Type must be application/json, got '\(contentType)'")
        }
        if let offset = Self.firstInvalidUTF8Offset(body) {
            throw HTTPError.badRequest(
                "request body is not valid UTF-8 (byte offset \(offset))", code: .invalidJSON)
        }
        if Self.nestingDepth(body, stopAfter: maxJSONDepth) > maxJSONDepth {
            throw HTTPError.badRequest(
                "request body nests arrays and objects deeper than \(maxJSONDepth) levels", code: .jsonTooDeep)
        }
        return body
    }

    /// Decodes the checked body (see `checkedJSONBody`) with Foundation's decoder.
    private func decodeChecked<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context) where !context.codingPath.isEmpty:
                // The syntax was fine: a value could not be held by its field (`3.5` for an Int,
                // `-1` for a UInt64, `1e308` for a Float). That is the caller's value, not its JSON.
                let field = Self.path(context.codingPath)
                throw HTTPError.badRequest(
                    "invalid value for '\(field)': \(context.debugDescription)", code: .invalidValue, param: field)
            case .dataCorrupted(let context) where context.underlyingError == nil && Self.isValidJSON(body):
                // Foundation on Linux reports a number its field cannot hold with an empty coding
                // path (and "not valid JSON"); the body parses, so it is the value that is wrong.
                throw HTTPError.badRequest(
                    "a value in the request body does not fit its field (a fraction or out-of-range number "
                        + "where an integer or a float goes)",
                    code: .invalidValue)
            case .dataCorrupted(let context):
                var message = "request body is not valid JSON"
                if let underlying = context.underlyingError {
                    let detail = (underlying as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
                    message += ": " + (detail ?? "\(underlying)")
                } else if !context.debugDescription.isEmpty {
                    message += ": " + context.debugDescription
                }
                throw HTTPError.badRequest(message, code: .invalidJSON)
            case .keyNotFound(let key, let context):
                let field = Self.path(context.codingPath + [key])
                throw HTTPError.badRequest("missing field '\(field)'", code: .invalidRequest, param: field)
            case .typeMismatch(_, let context), .valueNotFound(_, let context):
                let field = Self.path(context.codingPath)
                throw HTTPError.badRequest(
                    "invalid value at '\(field)': \(context.debugDescription)", code: .invalidValue,
                    param: field.isEmpty ? nil : field)
            @unknown default:
                throw HTTPError.badRequest("invalid request body", code: .invalidRequest)
            }
        } catch {
            throw HTTPError.badRequest("request body is not valid JSON", code: .invalidJSON)
        }
    }

    /// Whether `bytes` parse as JSON at all (only asked once decoding has failed).
    static func isValidJSON(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The deepest nesting of `[` and `{` outside strings, counting no further than one past
    /// `stopAfter`. A linear scan with no recursion: it only has to be right for valid JSON, and
    /// for anything else it just has to end (the decoder then reports the syntax error).
    package static func nestingDepth(_ bytes: [UInt8], stopAfter limit: Int) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for b in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > deepest {
                    deepest = depth
                    if deepest > limit { return deepest }
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            default: break
            }
        }
        return deepest
    }

    package static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        var consumed = 0
        // Track offset by re-encoding scalar lengths: cheap and exact for valid prefixes.
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                consumed += UTF8.width(scalar)
                offset = consumed
            case .emptyInput:
                return nil
            case .error:
                return offset
            }
        }
    }
}
