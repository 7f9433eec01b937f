import CLibPQ
import Foundation

/// One libpq connection. Not thread-safe: only `PostgresSessionStore`'s worker thread uses it.
/// Statements carry their values as parameters (never spliced into SQL); every value travels as
/// text, and rows come back as text (nil for NULL).
final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private let conninfo: String
    private let password: String?

    /// Connects to `conninfo` (a `postgres://` URL or `key=value` string); `password`, when
    /// given, overrides the URL's and `PGPASSWORD`. Never logs either.
    init(conninfo: String, password: String?) throws(StoreError) {
        self.conninfo = conninfo
        self.password = password
        try connect()
    }

    deinit { if let handle { PQfinish(handle) } }

    private func connect() throws(StoreError) {
        if let handle { PQfinish(handle) }
        handle = nil
        // expand_dbname=1: the "dbname" value may be a whole URL or conninfo string; the keywords
        // after it override what it says.
        var keys = ["dbname", "connect_timeout", "application_name"]
        var values = [conninfo, "5", "inferd"]
        if let password {
            keys.append("password")
            values.append(password)
        }
        let conn = withCStrings(keys) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let conn else { throw StoreError("cannot connect to PostgreSQL: out of memory", unavailable: true) }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(conn))
            PQfinish(conn)
            throw StoreError("cannot connect to PostgreSQL: \(message)", unavailable: true)
        }
        inferd_pq_silence_notices(conn)
        handle = conn
    }

    /// Runs one statement; its rows. A lost connection is reopened once before the statement is
    /// sent (never after: a statement that may have run is not repeated).
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(StoreError) -> [[String?]] {
        if handle == nil || PQstatus(handle) != CONNECTION_OK { try connect() }
        guard let handle else { throw StoreError("no PostgreSQL connection", unavailable: true) }
        let result = withOptionalCStrings(parameters) { p in
            PQexecParams(handle, sql, Int32(parameters.count), nil, p, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = Self.trimmed(result.map { PQresultErrorMessage($0) } ?? PQerrorMessage(handle))
            throw StoreError("\(message) (in \(sql.prefix(60)))", unavailable: Self.connectionLost(handle, result))
        }
        var rows: [[String?]] = []
        let columns = PQnfields(result)
        for r in 0..<PQntuples(result) {
            var row: [String?] = []
            for c in 0..<columns {
                row.append(PQgetisnull(result, r, c) == 1 ? nil : String(cString: PQgetvalue(result, r, c)))
            }
            rows.append(row)
        }
        return rows
    }

    /// Runs `body` in one transaction: all of its statements are stored, or none.
    @discardableResult
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try query("BEGIN")
        do {
            let value = try body()
            try query("COMMIT")
            return value
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    /// Whether a failure is the connection's (the database is down, restarting or unreachable)
    /// rather than the statement's: libpq made no server error for it (no SQLSTATE: the socket
    /// closed), or the server sent a connection exception (class 08) or a shutdown (57P01-57P03).
    private static func connectionLost(_ handle: OpaquePointer, _ result: OpaquePointer?) -> Bool {
        if PQstatus(handle) != CONNECTION_OK { return true }
        guard let result, let field = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) else { return true }
        let state = String(cString: field)
        return state.isEmpty || state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        message.map { String(cString: $0) }?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown error"
    }
}

/// `strings` as a C array of C strings, valid during `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    withOptionalCStrings(strings.map { $0 }, body)
}

/// `strings` as a C array of C strings (NULL for nil) with a NULL after the last, valid during `body`.
private func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0)! } }
    defer { for c in copies { free(c) } }
    let pointers = copies.map { $0.map { UnsafePointer($0) } } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
