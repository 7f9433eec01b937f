import CMicroHTTPD
import Foundation
import Glibc

/// What libmicrohttpd 0.9.75 lets through in a request's head and this server refuses (400, and
/// the connection closes after the answer): ambiguous framing (RFC 9112 §6.3), a missing `Host`
/// on HTTP/1.1, a header that must appear once appearing twice, control characters in a header.
extension HTTPServer {
    /// Headers a request may carry once: a second copy makes it ambiguous which one counts (two
    /// `Authorization` headers, two framings).
    static let singletonHeaders = ["Host", "Authorization", "Content-Length", "Content-Type", "Transfer-Encoding"]

    /// The first problem with a head, or nil. `droppedAfter`: the index of the header after whose
    /// value libmicrohttpd dropped bytes (a NUL inside the line: it keeps what comes before), or -1.
    package static func headProblem(version: String, headers: [(String, String)], droppedAfter: Int = -1)
        -> HTTPError?
    {
        if headers.indices.contains(droppedAfter) {
            let name = printable(headers[droppedAfter].0)
            return .badRequest(
                "header \(name) is malformed: a NUL byte inside it, or a folded line", code: .invalidRequest,
                param: name)
        }
        for (name, value) in headers {
            if let bad = (name + value).unicodeScalars.first(where: isControl) {
                let code = String(bad.value, radix: 16, uppercase: true)
                return .badRequest(
                    "header \(printable(name)) holds a control character (0x\(code))", code: .invalidRequest,
                    param: printable(name))
            }
        }
        let fields = HTTPHeaders(headers)
        for name in singletonHeaders where headers.filter({ $0.0.lowercased() == name.lowercased() }).count > 1 {
            return .badRequest("more than one \(name) header", code: .invalidRequest, param: name)
        }
        if let coding = fields["Transfer-Encoding"] {
            if fields["Content-Length"] != nil {
                return .badRequest(
                    "both Content-Length and Transfer-Encoding: a request must have one framing (RFC 9112 section 6.3)",
                    code: .invalidRequest, param: "Transfer-Encoding")
            }
            if coding.trimmingCharacters(in: .whitespaces).lowercased() != "chunked" {
                return .badRequest(
                    "Transfer-Encoding \(printable(coding)) is not supported: only chunked", code: .invalidRequest,
                    param: "Transfer-Encoding")
            }
        }
        if version == "HTTP/1.1" && fields["Host"] == nil {
            return .badRequest("an HTTP/1.1 request needs a Host header", code: .invalidRequest, param: "Host")
        }
        return nil
    }

    /// C0 controls and DEL; a horizontal tab is allowed in a value (RFC 9110 section 5.5).
    static func isControl(_ s: Unicode.Scalar) -> Bool {
        (s.value < 0x20 && s != "\t") || s.value == 0x7F
    }

    /// A header name or value for a message: controls shown as `\xNN`, at most 64 characters.
    static func printable(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars.prefix(64) {
            if isControl(scalar) || scalar == "\t" {
                out += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16, uppercase: true)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// libmicrohttpd 0.9.75 found a `Content-Length` that is not a number (or too large for one)
    /// and queued its own answer without calling the access handler; it would send that answer's
    /// header block twice. Called from libmicrohttpd's logger, on its thread, in the middle of
    /// handling that connection: it is the only one waiting for a head whose head is complete.
    /// This answers once, in the server's JSON shape, writing to the socket itself (nothing of
    /// the answer has been sent yet), then shuts the socket down, so libmicrohttpd's own answer
    /// fails to send and it closes the connection. Over TLS the socket cannot be written around
    /// GnuTLS: the connection is closed without an answer.
    func answerMalformedLength(tooLarge: Bool) {
        guard
            let (id, fd, remote) = connectionGuard.awaitingHead().first(where: { id, _, _ in
                inferd_mhd_header_size(OpaquePointer(bitPattern: UInt(id))) != 0
            })
        else { return }
        connectionGuard.serving(id)
        let error: HTTPError =
            tooLarge
            ? .payloadTooLarge(bodyTooLargeMessage)
            : .badRequest(
                "the Content-Length header is not a valid length", code: .invalidRequest, param: "Content-Length")
        let response = HTTPResponse.error(error)
        logger.info(
            "request refused", ["status": String(response.status), "code": error.code.rawValue, "remote": remote])
        if configuration.tlsCertificatePEM == nil, case .bytes(let body) = response.body {
            var text = "HTTP/1.1 \(response.status) \(tooLarge ? "Content Too Large" : "Bad Request")\r\n"
            let headers =
                response.headers + [("Connection", "close"), ("X-Request-Id", Self.generateRequestID())]
                + configuration.responseHeaders
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            text += "Content-Length: \(body.count)\r\n\r\n"
            let bytes = Array(text.utf8) + body
            _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        }
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
