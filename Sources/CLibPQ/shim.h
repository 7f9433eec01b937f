// The only C shim over libpq (Debian's libpq-dev). Every function here exists because Swift
// cannot reach the corresponding libpq facility directly, or would reach it unsafely; each says why.
#ifndef INFERD_CLIBPQ_SHIM_H
#define INFERD_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/// Silences libpq's notice processor. By default libpq prints every server NOTICE (for example
/// "relation already exists, skipping" from a migration's CREATE ... IF NOT EXISTS) to stderr
/// through a C function pointer; a Swift closure cannot be that pointer without capturing
/// context, and stray stderr lines would break inferd's structured log format.
static void inferd_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void inferd_pq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, inferd_pq_ignore_notice, 0);
}

#endif
