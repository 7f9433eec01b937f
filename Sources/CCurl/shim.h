// libcurl's client side, for the remote generation backend (an OpenAI-compatible upstream).
// libcurl's option and info calls are C variadic functions (curl_easy_setopt, curl_easy_getinfo,
// curl_multi_setopt), which Swift cannot call: each helper below is one typed, non-variadic entry
// point for one argument type. Nothing here holds state.
#ifndef INFERD_CCURL_SHIM_H
#define INFERD_CCURL_SHIM_H
#include <curl/curl.h>

/// A long-valued option (timeouts, flags, sizes): curl_easy_setopt is variadic.
static inline CURLcode inferd_curl_set_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

/// A string option (URL, method): curl_easy_setopt is variadic. libcurl copies the string.
static inline CURLcode inferd_curl_set_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}

/// A header list (CURLOPT_HTTPHEADER): curl_easy_setopt is variadic; the list must outlive the transfer.
static inline CURLcode inferd_curl_set_headers(CURL *easy, struct curl_slist *headers) {
    return curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
}

/// The request body, copied by libcurl (so the caller's buffer need not outlive the call): two
/// variadic setopt calls, size first, because CURLOPT_COPYPOSTFIELDS reads the size set before it.
static inline CURLcode inferd_curl_set_body(CURL *easy, const char *body, long length) {
    CURLcode rc = curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, length);
    if (rc != CURLE_OK) return rc;
    return curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, body);
}

/// The body and header callbacks share libcurl's write-callback signature. A function pointer
/// cannot pass through curl_easy_setopt's varargs from Swift, hence this typed setter.
typedef size_t (*inferd_curl_write_fn)(char *data, size_t size, size_t count, void *context);
static inline CURLcode inferd_curl_set_callbacks(CURL *easy, inferd_curl_write_fn body, inferd_curl_write_fn header,
                                                 void *context) {
    CURLcode rc = curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body);
    if (rc == CURLE_OK) rc = curl_easy_setopt(easy, CURLOPT_WRITEDATA, context);
    if (rc == CURLE_OK) rc = curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, header);
    if (rc == CURLE_OK) rc = curl_easy_setopt(easy, CURLOPT_HEADERDATA, context);
    return rc;
}

/// The HTTP status of the response so far (0 before one arrived): curl_easy_getinfo is variadic.
static inline long inferd_curl_response_code(CURL *easy) {
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

/// Bytes of request head sent so far (0 when the request never left this process), so a failure
/// can be told apart as "never reached the upstream" (safe to try another) or "failed after
/// sending": curl_easy_getinfo is variadic.
static inline long inferd_curl_request_bytes(CURL *easy) {
    long bytes = 0;
    curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &bytes);
    return bytes;
}

/// The result of the multi handle's finished transfer, if one finished: CURLMsg's payload is a
/// C union, read here rather than through Swift's import of it. Returns 1 and sets `*result` when
/// a transfer is done.
static inline int inferd_curl_multi_done(CURLM *multi, CURLcode *result) {
    int left = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *result = msg->data.result;
            return 1;
        }
    }
    return 0;
}

/// The abort value a write callback returns to stop a transfer (CURL_WRITEFUNC_ERROR is a macro
/// Swift does not import in every libcurl version; 0 bytes written has the same effect).
static inline size_t inferd_curl_write_abort(void) { return 0; }

#endif
