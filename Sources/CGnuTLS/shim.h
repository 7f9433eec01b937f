// The TLS client side, for `inferd healthcheck` against a server with tls_cert/tls_key set.
// GnuTLS is already a dependency of libmicrohttpd (the server side); this links it directly.
#ifndef INFERD_CGNUTLS_SHIM_H
#define INFERD_CGNUTLS_SHIM_H
#include <stddef.h>
#include <string.h>
#include <gnutls/gnutls.h>

/// Sends `request` over TLS on the connected socket `fd` and reads the answer until it holds a
/// line break, the peer closes, or `cap` bytes; returns the bytes read, or -1 with `*error` set
/// to GnuTLS's message. Exists because the handshake and record loops (retry on non-fatal
/// errors, credential lifetimes) are GnuTLS idioms best kept in C. The peer's certificate is
/// not verified: the health check talks to its own server over loopback, where the
/// certificate's names would not match anyway; it checks liveness, not identity.
static inline long inferd_tls_exchange(int fd, const char *request, size_t request_len, char *out, size_t cap,
                                       const char **error) {
    gnutls_certificate_credentials_t cred = NULL;
    gnutls_session_t session = NULL;
    long got = -1;
    int rc = gnutls_certificate_allocate_credentials(&cred);
    if (rc >= 0) rc = gnutls_init(&session, GNUTLS_CLIENT);
    if (rc >= 0) rc = gnutls_set_default_priority(session);
    if (rc >= 0) rc = gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, cred);
    if (rc >= 0) {
        gnutls_transport_set_int(session, fd);
        gnutls_handshake_set_timeout(session, GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
        do {
            rc = gnutls_handshake(session);
        } while (rc < 0 && gnutls_error_is_fatal(rc) == 0);
    }
    size_t sent = 0;
    while (rc >= 0 && sent < request_len) {
        ssize_t n = gnutls_record_send(session, request + sent, request_len - sent);
        if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
        if (n < 0) rc = (int)n; else sent += (size_t)n;
    }
    if (rc >= 0) {
        size_t have = 0;
        while (have < cap && memchr(out, '\n', have) == NULL) {
            ssize_t n = gnutls_record_recv(session, out + have, cap - have);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
            if (n < 0) { rc = (int)n; break; }
            if (n == 0) break;
            have += (size_t)n;
        }
        if (rc >= 0) got = (long)have;
    }
    if (rc < 0) *error = gnutls_strerror(rc);
    if (session) gnutls_deinit(session);
    if (cred) gnutls_certificate_free_credentials(cred);
    return got;
}

#endif
