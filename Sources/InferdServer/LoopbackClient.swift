import CGnuTLS
import Foundation

/// A minimal blocking HTTP/1.1 client for the server's own commands (`healthcheck`,
/// `bench --http`), so the container image needs no curl. One request per connection.
package struct LoopbackClient {
    package let host: String
    package let port: Int
    package var timeoutSeconds: Double = 5

    package init(host: String, port: Int, timeoutSeconds: Double = 5) {
        self.host = host
        self.port = port
        self.timeoutSeconds = timeoutSeconds
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Opens a connection, sends `method path` with an optional JSON body, and returns the
    /// connected socket; the caller reads the answer and closes it.
    package func open(_ method: String, _ path: String, json: String? = nil) throws -> Int32 {
        let (fd, bytes) = try connect(method, path, json: json)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else {
                close(fd)
                throw Failure(description: "send failed")
            }
            sent += n
        }
        return fd
    }

    /// The status code of a complete, non-streaming answer.
    package func status(_ method: String, _ path: String) throws -> Int {
        let fd = try open(method, path)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var head = [UInt8]()
        while !head.contains(0x0A) {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw Failure(description: "no answer from \(host):\(port)") }
            head += buffer[0..<n]
        }
        return try Self.statusCode(head)
    }

    /// The status code of a complete answer over HTTPS (see `inferd_tls_exchange` on why the
    /// certificate is not verified).
    func statusOverTLS(_ method: String, _ path: String) throws -> Int {
        let (fd, request) = try connect(method, path)
        defer { close(fd) }
        var buffer = [CChar](repeating: 0, count: 4096)
        var error: UnsafePointer<CChar>?
        let n = request.withUnsafeBufferPointer { req in
            req.withMemoryRebound(to: CChar.self) {
                inferd_tls_exchange(fd, $0.baseAddress, $0.count, &buffer, buffer.count, &error)
            }
        }
        guard n > 0 else {
            let why = error.map { String(cString: $0) } ?? "no answer"
            throw Failure(description: "TLS exchange with \(host):\(port) failed: \(why)")
        }
        return try Self.statusCode(buffer.prefix(n).map { UInt8(bitPattern: $0) })
    }

    static func statusCode(_ head: [UInt8]) throws -> Int {
        let line = String(decoding: head.prefix { $0 != 0x0A }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, let code = Int(parts[1]) else { throw Failure(description: "bad status line: \(line)") }
        return code
    }

    /// Connects, and formats the request without sending it.
    private func connect(_ method: String, _ path: String, json: String? = nil) throws -> (Int32, [UInt8]) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: Int(timeoutSeconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        // A server bound to every address is reached on loopback.
        let target = (host == "0.0.0.0" || host.isEmpty) ? "127.0.0.1" : host
        guard inet_pton(AF_INET, target, &addr.sin_addr) == 1 else {
            close(fd)
            throw Failure(description: "not an IPv4 address: \(target)")
        }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot connect to \(target):\(port): \(why)")
        }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(target)\r\nConnection: close\r\n"
        if let json {
            request += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
        } else {
            request += "\r\n"
        }
        return (fd, Array(request.utf8))
    }
}
