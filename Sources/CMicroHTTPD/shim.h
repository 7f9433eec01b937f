// The only C shim over libmicrohttpd. Every function here exists because Swift cannot
// reach the corresponding libmicrohttpd facility directly; each says why.
#ifndef INFERD_CMICROHTTPD_SHIM_H
#define INFERD_CMICROHTTPD_SHIM_H
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

/// Everything `inferd_mhd_start` needs. A plain struct because `MHD_start_daemon` takes its
/// options as C varargs, which Swift cannot call.
typedef struct inferd_mhd_config {
    unsigned int flags;
    const char *host; /* numeric IPv4 or IPv6 address */
    uint16_t port;    /* 0 = let the kernel pick */
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit; /* 0 = none */
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    MHD_AccessHandlerCallback access_handler;
    void *access_handler_cls;
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    MHD_NotifyConnectionCallback notify_connection;
    void *notify_connection_cls;
    const char *tls_cert_pem; /* PEM contents; with tls_key_pem and MHD_USE_TLS in flags: HTTPS */
    const char *tls_key_pem;
    MHD_LogCallback logger; /* with MHD_USE_ERROR_LOG in flags: libmicrohttpd's messages */
    void *logger_cls;
} inferd_mhd_config;

/// Decodes a URL's (or query argument's) `%HH` escapes as libmicrohttpd's own decoder does, except
/// that an escaped NUL (`%00`) becomes DEL (0x7F). Exists because the path reaches the access
/// handler as a C string: a decoded NUL would cut it there, so `/v1/sessions/ID%00junk` would read
/// as `/v1/sessions/ID`. DEL is a control character too, so whatever refuses control characters
/// (ids in paths and queries) refuses it instead of seeing the text before it.
static inline size_t inferd_mhd_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    size_t length = MHD_http_unescape(s);
    for (size_t i = 0; i < length; i++) {
        if (s[i] == '\0') s[i] = 0x7f;
    }
    return length;
}

/// Starts a daemon. Exists because `MHD_start_daemon` is variadic and does not import into Swift.
/// Returns NULL on failure with `*error_out` set to an errno-style code (EINVAL for a bad host,
/// otherwise whatever errno the failed bind/listen left, or 0 when libmicrohttpd gave none).
static inline struct MHD_Daemon *inferd_mhd_start(const inferd_mhd_config *c, int *error_out) {
    struct sockaddr_in addr4;
    struct sockaddr_in6 addr6;
    const struct sockaddr *addr;
    unsigned int flags = c->flags;
    memset(&addr4, 0, sizeof addr4);
    memset(&addr6, 0, sizeof addr6);
    if (inet_pton(AF_INET, c->host, &addr4.sin_addr) == 1) {
        addr4.sin_family = AF_INET;
        addr4.sin_port = htons(c->port);
        addr = (const struct sockaddr *)&addr4;
    } else if (inet_pton(AF_INET6, c->host, &addr6.sin6_addr) == 1) {
        addr6.sin6_family = AF_INET6;
        addr6.sin6_port = htons(c->port);
        addr = (const struct sockaddr *)&addr6;
        flags |= MHD_USE_IPv6;
    } else {
        *error_out = EINVAL;
        return NULL;
    }
    /* The HTTPS options lead the list when TLS is on; otherwise the list starts at the socket
       address (varargs cannot be built up conditionally, so the list is passed as an array). */
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)c->tls_key_pem},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)c->tls_cert_pem},
        {MHD_OPTION_SOCK_ADDR, 0, (void *)addr},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)c->connection_limit, NULL},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)c->per_ip_connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)c->connection_timeout_seconds, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)c->connection_memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)c->completed, c->completed_cls},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)c->notify_connection, c->notify_connection_cls},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)c->logger, c->logger_cls},
        {MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)inferd_mhd_unescape, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    int tls = (flags & MHD_USE_TLS) && c->tls_cert_pem != NULL && c->tls_key_pem != NULL;
    errno = 0;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, c->port, NULL, NULL, c->access_handler, c->access_handler_cls,
        MHD_OPTION_ARRAY, tls ? options : options + 2,
        MHD_OPTION_END);
    *error_out = (d == NULL) ? errno : 0;
    return d;
}

/// 1 when GnuTLS refuses the configuration's certificate/key pair, else 0. Exists because a
/// failed `MHD_start_daemon` does not say whether the socket or the TLS setup failed: this
/// starts a second daemon with the same PEM pair and no listening socket at all.
static inline int inferd_mhd_tls_refused(const inferd_mhd_config *c) {
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, c->access_handler, c->access_handler_cls,
        MHD_OPTION_HTTPS_MEM_KEY, c->tls_key_pem,
        MHD_OPTION_HTTPS_MEM_CERT, c->tls_cert_pem,
        MHD_OPTION_END);
    if (d == NULL) return 1;
    MHD_stop_daemon(d);
    return 0;
}

/// The port the daemon really listens on. Exists because `MHD_get_daemon_info` is variadic.
static inline int inferd_mhd_bound_port(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? -1 : (int)info->port;
}

/// The connection's socket, for the hang-up watcher. Exists because `MHD_get_connection_info`
/// is variadic and returns a union pointer.
static inline int inferd_mhd_connection_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/// The peer's address as text into `buf`. Exists because `MHD_get_connection_info` is variadic and
/// the sockaddr family switch is simpler in C. Writes "" when unknown.
static inline void inferd_mhd_client_address(struct MHD_Connection *c, char *buf, size_t len) {
    buf[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
    }
}

/// The size of the request's head (request line, headers, empty line) once libmicrohttpd has
/// received it all, else 0. Exists because `MHD_get_connection_info` is variadic. libmicrohttpd
/// 0.9.75 queues its own 400 (or 413) for a malformed `Content-Length` without calling the
/// access handler, and then builds that answer's header block twice (connection.c,
/// MHD_CONNECTION_HEADERS_RECEIVED); the server finds that connection as the only one waiting
/// for a head whose head is complete, when libmicrohttpd logs the problem.
static inline size_t inferd_mhd_header_size(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

struct inferd_head_map {
    const char *base;
    size_t size;
    unsigned char *covered;
    size_t count;
    size_t ends[128]; /* where each header's value ends, by order (the first 128) */
};

static inline void inferd_head_cover(struct inferd_head_map *m, const char *p, size_t n) {
    if (p == NULL || p < m->base || (size_t)(p - m->base) > m->size || n > m->size - (size_t)(p - m->base)) return;
    memset(m->covered + (p - m->base), 1, n);
}

static enum MHD_Result inferd_head_mark(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                        const char *value, size_t value_size) {
    (void)kind;
    struct inferd_head_map *m = cls;
    inferd_head_cover(m, key, key_size);
    inferd_head_cover(m, value, value_size);
    if (m->count < 128) m->ends[m->count] = (value != NULL && value >= m->base) ? (size_t)(value - m->base) + value_size : 0;
    m->count++;
    return MHD_YES;
}

/// 1 + the index of the header after whose value the request's head holds bytes libmicrohttpd
/// dropped, else 0. libmicrohttpd 0.9.75 parses a header line as a C string, so in
/// `Authorization: Bearer KEY\0junk` it sees the value `Bearer KEY` and silently drops the rest;
/// the line is still in its read buffer (parsed in place), so every byte of the head that is
/// neither the request line, a header's name or value, nor a separator (NUL-terminated CR/LF,
/// the colon, spaces) is such a dropped byte. Exists in C for the pointer arithmetic.
static inline int inferd_mhd_head_dropped_bytes(struct MHD_Connection *c, const char *method, const char *version) {
    size_t size = inferd_mhd_header_size(c);
    if (size == 0 || method == NULL || version == NULL || version < method) return 0;
    struct inferd_head_map m;
    memset(&m, 0, sizeof m);
    m.base = method;
    m.size = size;
    m.covered = calloc(size, 1);
    if (m.covered == NULL) return 0;
    inferd_head_cover(&m, method, (size_t)(version - method) + strlen(version));
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, inferd_head_mark, &m);
    int found = 0;
    for (size_t i = 0; i < size && !found; i++) {
        unsigned char b = (unsigned char)method[i];
        if (m.covered[i] || b == 0 || b == '\r' || b == '\n' || b == ' ' || b == '\t') continue;
        size_t best = 0;
        for (size_t h = 0; h < m.count && h < 128; h++) {
            if (m.ends[h] <= i) best = h;
        }
        found = (int)best + 1;
    }
    free(m.covered);
    return found;
}

/// 1 when this libmicrohttpd can serve HTTPS. Exists because `enum MHD_FEATURE` has aliased
/// values (`MHD_FEATURE_TLS` = `MHD_FEATURE_SSL` = 2) that Swift does not import as cases.
static inline int inferd_mhd_tls_supported(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

/// `MHD_SIZE_UNKNOWN` is a macro over `((uint64_t) -1LL)` that Swift does not import.
static inline uint64_t inferd_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/// `MHD_CONTENT_READER_END_OF_STREAM` / `_END_WITH_ERROR` are casts Swift does not import.
static inline ssize_t inferd_mhd_reader_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t inferd_mhd_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

/// `POLLRDHUP` needs `_GNU_SOURCE` and is not exported by Swift's Glibc module; the value is
/// the Linux one (0x2000).
static inline short inferd_mhd_pollrdhup(void) {
#ifdef POLLRDHUP
    return POLLRDHUP;
#else
    return 0x2000;
#endif
}

#endif
