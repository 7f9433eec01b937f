// The only C shim over SQLite (Debian's libsqlite3-dev). Every function here exists because
// Swift cannot reach the corresponding SQLite facility directly; each says why.
#ifndef INFERD_CSQLITE_SHIM_H
#define INFERD_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Binds text that SQLite must copy. `SQLITE_TRANSIENT` is a macro casting -1 to a function
/// pointer (`(sqlite3_destructor_type)-1`), which Swift cannot import; without it SQLite would
/// keep a pointer into a Swift string that is freed as soon as the call returns.
static inline int inferd_sqlite_bind_text(sqlite3_stmt *stmt, int index, const char *text, int bytes) {
    return sqlite3_bind_text(stmt, index, text, bytes, SQLITE_TRANSIENT);
}

#endif
