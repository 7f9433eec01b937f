import CSQLite
import Foundation

/// One SQLite connection, used by one caller at a time (a lock serializes them). Statements are
/// prepared per call: the store writes a few rows per turn, so simplicity beats caching.
final class SQLiteDatabase: @unchecked Sendable {
    enum Value: Sendable, Equatable {
        case text(String)
        case int(Int)
        case null
    }

    private let handle: OpaquePointer
    private let lock = NSLock()
    let path: String

    init(path: String) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw StoreError("cannot open database \(path): \(message)")
        }
        self.handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs statements that return nothing (schema, pragmas without results).
    func execute(_ sql: String) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        try executeLocked(sql)
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    func query(_ sql: String, _ parameters: [Value] = []) throws(StoreError) -> [[Value]] {
        lock.lock()
        defer { lock.unlock() }
        return try queryLocked(sql, parameters)
    }

    /// Runs `body` in one transaction: all of its statements are stored, or none.
    @discardableResult
    func transaction<T>(_ body: (Transaction) throws(StoreError) -> T) throws(StoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        try executeLocked("BEGIN IMMEDIATE")
        do {
            let value = try body(Transaction(db: self))
            try executeLocked("COMMIT")
            return value
        } catch {
            try? executeLocked("ROLLBACK")
            throw error
        }
    }

    /// Statements inside `transaction` (the lock is already held).
    struct Transaction {
        fileprivate let db: SQLiteDatabase
        @discardableResult
        func query(_ sql: String, _ parameters: [Value] = []) throws(StoreError) -> [[Value]] {
            try db.queryLocked(sql, parameters)
        }
    }

    private func executeLocked(_ sql: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(handle, sql, nil, nil, &error) != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? lastError
            sqlite3_free(error)
            throw StoreError("\(message) (in \(sql.prefix(60)))")
        }
    }

    private var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    fileprivate func queryLocked(_ sql: String, _ parameters: [Value]) throws(StoreError) -> [[Value]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw StoreError("\(lastError) (in \(sql.prefix(60)))")
        }
        defer { sqlite3_finalize(statement) }
        for (i, value) in parameters.enumerated() {
            let index = Int32(i + 1)
            switch value {
            case .text(let s):
                _ = s.withCString { inferd_sqlite_bind_text(statement, index, $0, Int32(strlen($0))) }
            case .int(let n):
                sqlite3_bind_int64(statement, index, Int64(n))
            case .null:
                sqlite3_bind_null(statement, index)
            }
        }
        var rows: [[Value]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw StoreError("\(lastError) (in \(sql.prefix(60)))") }
            var row: [Value] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL:
                    row.append(.null)
                case SQLITE_INTEGER:
                    row.append(.int(Int(sqlite3_column_int64(statement, column))))
                default:
                    row.append(.text(sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""))
                }
            }
            rows.append(row)
        }
        return rows
    }
}

extension SQLiteDatabase.Value {
    var text: String? {
        if case .text(let s) = self { return s }
        return nil
    }
    var int: Int? {
        if case .int(let n) = self { return n }
        return nil
    }
}
