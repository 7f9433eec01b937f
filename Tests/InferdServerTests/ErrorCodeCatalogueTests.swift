import Engine
import Foundation
import HTTPServer
import Sessions
import Testing

@testable import InferdServer

/// The wire's error codes: one enum, the same set as `docs/api.md`'s error table.
@Suite struct ErrorCodeCatalogueTests {
    /// The codes in the `code` column of the table under `## Errors` in `docs/api.md`.
    static func documentedCodes() throws -> [String] {
        let url = TestPaths.packageRoot.appendingPathComponent("docs/api.md")
        let lines = try String(contentsOf: url, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "## Errors"), "docs/api.md has no '## Errors' section")
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") }
        let rows = section.filter { $0.hasPrefix("|") }.dropFirst(2)  // the header and its separator
        #expect(!rows.isEmpty, "no error table under '## Errors'")
        var codes: [String] = []
        for row in rows {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            try #require(cells.count >= 4, "a row of the error table without its columns: \(row)")
            let code = cells[2]
            codes += code.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        return codes
    }

    @Test func rawValuesAreUniqueSnakeCase() {
        let raw = ErrorCode.allCases.map(\.rawValue)
        #expect(Set(raw).count == raw.count, "a raw value appears twice")
        for code in raw {
            let words = code.split(separator: "_", omittingEmptySubsequences: false)
            let snake =
                !words.isEmpty
                && words.allSatisfy { w in
                    !w.isEmpty && w.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
                }
                && code.first.map { ("a"..."z").contains($0) } == true
            #expect(snake, "'\(code)' is not snake_case")
        }
    }

    @Test func theEnumIsTheDocumentedTable() throws {
        let documented = try Self.documentedCodes()
        #expect(Set(documented).count == documented.count, "docs/api.md lists a code twice: \(documented)")
        let sent = Set(ErrorCode.allCases.map(\.rawValue))
        for code in Set(documented).subtracting(sent).sorted() {
            Issue.record("docs/api.md documents '\(code)', which is no ErrorCode")
        }
        for code in sent.subtracting(documented).sorted() {
            Issue.record("ErrorCode '\(code)' is missing from docs/api.md's error table")
        }
    }

    /// The session metrics label an engine error with `GenerationError.code`; the client sees
    /// `ErrorCode(_:)`. The two must agree for every case.
    @Test func generationErrorCodesAreTheWireCodes() {
        let errors: [GenerationError] = [
            .contextOverflow(promptTokens: 1, maxTokens: 1, contextLength: 1), .emptyPrompt,
            .invalidOption(name: "temperature", reason: "r"), .computeFailed("f"), .shuttingDown,
            .serverBusy(queueLength: 1, retryAfterSeconds: 1), .tenantBusy(holding: 2, limit: 2, retryAfterSeconds: 1),
            .queueTimeout,
            .upstreamUnavailable("u", retryAfterSeconds: 1), .upstreamRejected(.unprocessable, message: "m"),
            .upstreamFailed("f"),
        ]
        for error in errors {
            #expect(ErrorCode(error).rawValue == error.code, "\(error)")
            #expect(HTTPError(error).code == ErrorCode(error), "\(error)")
        }
    }

    /// The wire spelling of a code is its raw value, in both error shapes.
    @Test func errorBodiesCarryTheRawValue() throws {
        for code in ErrorCode.allCases {
            let native = HTTPResponse.error(HTTPError(status: 400, message: "m", type: "t", code: code))
            let openAI = OpenAIError(status: 400, message: "m", type: "t", code: code).response
            for response in [native, openAI] {
                guard case .bytes(let bytes) = response.body else {
                    Issue.record("expected a body")
                    return
                }
                let json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
                let error = try #require(json["error"] as? [String: Any])
                #expect(error["code"] as? String == code.rawValue)
            }
        }
    }
}
