import Foundation
import Glibc
import Telemetry

// Socket-level helpers shared by the test suites that drive a real server: a raw HTTP/1.1
// client, an SSE parser, log capture and polling helpers.

public struct ClientError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// Runs blocking socket work on its own thread so it never holds up Swift's cooperative pool
/// (the server's request Tasks run there).
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    public var text: String { String(decoding: body, as: UTF8.self) }
    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    public var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    public var errorParam: String? { (json?["error"] as? [String: Any])?["param"] as? String }
}

/// A raw TCP HTTP/1.1 client with blocking sockets and receive timeouts.
public final class TestClient: @unchecked Sendable {
    public let fd: Int32
    public private(set) var buffer: [UInt8] = []
    public private(set) var closed = false

    public init(port: Int, receiveBuffer: Int? = nil, timeout: Double = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket: \(errno)") }
        if let receiveBuffer {
            var size = Int32(receiveBuffer)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        setTimeout(timeout)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            Glibc.close(fd)
            throw ClientError(description: "connect: \(errno)")
        }
    }

    deinit { close() }

    public func setTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func close() {
        if !closed {
            closed = true
            Glibc.close(fd)
        }
    }

    @discardableResult
    public func send(_ s: String) -> Bool { send(Array(s.utf8)) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Reads more bytes into the buffer; false on EOF, error or timeout (`readFailure` tells which).
    public func fill(max: Int = 65536) -> Bool {
        var chunk = [UInt8](repeating: 0, count: max)
        errno = 0
        let n = recv(fd, &chunk, max, 0)
        if n <= 0 { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// Reads one byte straight from the socket (slow reader).
    public func readByte() -> UInt8? {
        if !buffer.isEmpty { return buffer.removeFirst() }
        var b: UInt8 = 0
        return recv(fd, &b, 1, 0) == 1 ? b : nil
    }

    /// True when the server closed the connection (EOF or reset) within the receive timeout.
    public func waitForClose() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// Why the last `fill` got nothing: the receive timeout passing is not the server closing
    /// (a test that checks the server keeps a connection open must not read one as the other).
    func readFailure(_ what: String) -> ClientError {
        if errno == EAGAIN || errno == EWOULDBLOCK {
            return ClientError(description: "no byte within the receive timeout while reading \(what)")
        }
        return ClientError(description: "connection closed while reading \(what)")
    }

    public func readLine() throws -> String {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<i])
                buffer.removeFirst(i + 1)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard fill() else { throw readFailure("a line") }
        }
    }

    public func readExactly(_ n: Int) throws -> [UInt8] {
        while buffer.count < n {
            guard fill() else { throw readFailure("body") }
        }
        let out = Array(buffer[..<n])
        buffer.removeFirst(n)
        return out
    }

    public func readHead() throws -> (status: Int, headers: [(String, String)]) {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw ClientError(description: "bad status line '\(statusLine)'")
        }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                headers.append(
                    (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }
        return (status, headers)
    }

    /// One decoded chunk of a chunked body; nil at the terminating zero-size chunk.
    public func readChunk() throws -> [UInt8]? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
            throw ClientError(description: "bad chunk size '\(sizeLine)'")
        }
        if size == 0 {
            _ = try readLine()
            return nil
        }
        let data = try readExactly(size)
        _ = try readLine()
        return data
    }

    public func readResponse() throws -> RawResponse {
        let (status, headers) = try readHead()
        let lookup = { (name: String) in headers.first { $0.0.lowercased() == name }?.1 }
        var body: [UInt8] = []
        if let length = lookup("content-length").flatMap({ Int($0) }) {
            body = try readExactly(length)
        } else if lookup("transfer-encoding")?.lowercased() == "chunked" {
            while let chunk = try readChunk() { body += chunk }
        }
        return RawResponse(status: status, headers: headers, body: body)
    }

    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> RawResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        guard send(Array(head.utf8) + body) else { throw ClientError(description: "send failed") }
        return try readResponse()
    }
}

/// Reads an SSE body (chunked) and splits it into events and comments.
public struct SSEReader: Sendable {
    public struct Event: Equatable, Sendable {
        public var name: String
        public var id: String
        public var data: String

        public init(name: String, id: String, data: String) {
            self.name = name
            self.id = id
            self.data = data
        }
    }

    public var text = ""

    public init(text: String = "") { self.text = text }

    /// Everything parsed so far: events and `: comment` lines in order. An event has a name, or
    /// only `data:` lines (OpenAI-style streams; its name is then empty).
    public var items: [String] {
        text.components(separatedBy: "\n\n").dropLast().map { $0 }
    }

    public var events: [Event] {
        items.compactMap { block in
            var e = Event(name: "", id: "", data: "")
            var data: [String] = []
            var isEvent = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("event: ") {
                    e.name = String(line.dropFirst(7))
                    isEvent = true
                } else if line.hasPrefix("id: ") {
                    e.id = String(line.dropFirst(4))
                } else if line.hasPrefix("data: ") {
                    data.append(String(line.dropFirst(6)))
                    isEvent = true
                }
            }
            e.data = data.joined(separator: "\n")
            return isEvent ? e : nil
        }
    }
}

/// Captures log lines for assertions.
public final class LogCapture: Sendable {
    package let lines = Locked<[String]>([])
    public init() {}
    public var logger: Logger {
        Logger(label: "test", minimumLevel: .info, format: .text, sink: LogSink { [self] in self.append($0) })
    }
    public func append(_ line: String) { lines.withLock { $0.append(line) } }
    public func matching(_ s: String) -> [String] { lines.withLock { $0.filter { $0.contains(s) } } }
}

/// Polls `condition` until true or `timeout` passes.
public func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

public func openFDCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

public func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[s.count / 2]
}

extension TestClient {
    /// A JSON POST; reads the whole response (not for event streams).
    public func postJSON(_ path: String, _ json: String, headers: [(String, String)] = []) throws -> RawResponse {
        try request("POST", path, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    /// Starts a JSON POST whose answer is an event stream; returns status and headers.
    public func startStream(
        _ path: String, _ json: String, headers: [(String, String)] = []
    ) throws -> (status: Int, headers: [(String, String)]) {
        var head = "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "Content-Length: \(json.utf8.count)\r\n\r\n"
        guard send(Array(head.utf8) + Array(json.utf8)) else { throw ClientError(description: "send failed") }
        return try readHead()
    }

    /// Reads chunks of an event stream into `reader` until `until` holds or the stream ends.
    /// Returns false when the stream ended (or timed out) first.
    @discardableResult
    public func readEvents(into reader: inout SSEReader, until: (SSEReader) -> Bool) throws -> Bool {
        while !until(reader) {
            guard let chunk = try readChunk() else { return until(reader) }
            reader.text += String(decoding: chunk, as: UTF8.self)
        }
        return true
    }
}
