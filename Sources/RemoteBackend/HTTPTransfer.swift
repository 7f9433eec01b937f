import CCurl
import Foundation
import Telemetry

/// One HTTP request to an upstream, its response read incrementally and cut into lines.
///
/// Runs libcurl's multi interface on a thread of its own (never on Swift's cooperative pool):
/// the loop waits in `curl_multi_poll` for at most `pollInterval`, and `cancel()` wakes it with
/// `curl_multi_wakeup`, after which the easy handle is cleaned up, which closes the socket. So a
/// cancel reaches the upstream as a closed connection within one loop step, whether bytes flow
/// or the upstream is silent. Each transfer has its own connection (no pooling): closing it is
/// how the upstream learns of a cancel, and nothing is left open after `run` returns.
public final class HTTPTransfer: @unchecked Sendable {
    // @unchecked: `callbacks` is touched only by the thread inside `run` (libcurl calls the
    // write callbacks from `curl_multi_perform` on that thread); `shared` is locked.
    private let request: HTTPTransferRequest
    private let options: TransferOptions
    private let callbacks: CallbackState

    private struct Shared {
        var cancelled = false
        /// Set while the multi handle exists, so `cancel()` may wake it.
        var multi: UnsafeMutableRawPointer?
    }
    private let shared = Locked(Shared())

    /// `onLine` receives each line of a 2xx response's body, on the transfer's thread, in order;
    /// returning false ends the transfer (`.stoppedByHandler`). `onResponseStart` is called once,
    /// before the first line, when a 2xx response's first body byte arrives.
    public init(
        _ request: HTTPTransferRequest, options: TransferOptions, onResponseStart: @escaping () -> Void = {},
        onLine: @escaping (String) -> Bool
    ) {
        self.request = request
        self.options = options
        self.callbacks = CallbackState(
            maxLineBytes: options.maxLineBytes, maxErrorBodyBytes: options.maxErrorBodyBytes,
            onResponseStart: onResponseStart, onLine: onLine)
    }

    /// Stops the transfer from any thread: its loop wakes, closes the connection and returns
    /// `.cancelled`. Safe before, during and after `run`.
    public func cancel() {
        shared.withLock { s in
            s.cancelled = true
            if let multi = s.multi { curl_multi_wakeup(multi) }
        }
    }

    /// Runs the transfer on a thread of its own (a parked one when there is one, see
    /// `TransferThreads`); the awaiting Task's cancellation cancels it. Returns once the
    /// connection is closed.
    public func perform() async -> TransferOutcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TransferOutcome, Never>) in
                TransferThreads.shared.run { continuation.resume(returning: self.run()) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Runs the transfer on the calling thread (blocking it) until it ends.
    public func run() -> TransferOutcome {
        Self.globalInit()
        guard let easy = curl_easy_init() else { return .failed(.transport("libcurl could not make a handle")) }
        guard let multi = curl_multi_init() else {
            curl_easy_cleanup(easy)
            return .failed(.transport("libcurl could not make a multi handle"))
        }
        var headers: UnsafeMutablePointer<curl_slist>?
        // No "Expect: 100-continue" round trip before the body.
        for line in request.headers + ["Expect:"] { headers = curl_slist_append(headers, line) }
        defer {
            shared.withLock { $0.multi = nil }
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)  // closes the connection
            curl_multi_cleanup(multi)
            curl_slist_free_all(headers)
        }
        if let failure = configure(easy, headers: headers) { return .failed(.transport(failure)) }
        curl_multi_add_handle(multi, easy)
        let proceed = shared.withLock { s -> Bool in
            s.multi = multi
            return !s.cancelled
        }
        guard proceed else { return .cancelled }
        callbacks.easy = easy
        let start = ContinuousClock.now
        callbacks.lastByte = start
        var running: Int32 = 1
        while true {
            curl_multi_perform(multi, &running)
            if running == 0 || callbacks.stopped { break }
            if shared.withLock({ $0.cancelled }) { return .cancelled }
            let now = ContinuousClock.now
            if let deadline = options.deadline, now >= deadline { return .deadlinePassed }
            if !callbacks.receivedAny, now - start >= options.firstByteTimeout {
                return .failed(.firstByteTimeout(seconds: options.firstByteTimeout.inSeconds))
            }
            if callbacks.receivedAny, now - callbacks.lastByte >= options.idleTimeout {
                return .failed(.idleTimeout(seconds: options.idleTimeout.inSeconds))
            }
            curl_multi_poll(multi, nil, 0, Int32(options.pollInterval.milliseconds), nil)
        }
        if shared.withLock({ $0.cancelled }) { return .cancelled }
        if let failure = callbacks.failure { return .failed(failure) }
        if callbacks.handlerStopped { return .stoppedByHandler }
        var code = CURLE_OK
        _ = inferd_curl_multi_done(multi, &code)
        guard code == CURLE_OK else { return .failed(Self.classify(code, easy: easy)) }
        if callbacks.pendingLines() == false { return .stoppedByHandler }
        if let failure = callbacks.failure { return .failed(failure) }
        return .finished(
            HTTPResponseSummary(
                status: inferd_curl_response_code(easy), retryAfterSeconds: callbacks.retryAfter,
                errorBody: String(decoding: callbacks.errorBody, as: UTF8.self)))
    }

    private func configure(_ easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?) -> String? {
        var rc = inferd_curl_set_string(easy, CURLOPT_URL, request.url)
        func set(_ option: CURLoption, _ value: Int) {
            if rc == CURLE_OK { rc = inferd_curl_set_long(easy, option, value) }
        }
        // No signals from libcurl's resolver timeouts on a threaded process.
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(options.connectTimeout.milliseconds)))
        set(CURLOPT_FOLLOWLOCATION, 0)
        set(CURLOPT_FORBID_REUSE, 1)
        set(CURLOPT_TCP_NODELAY, 1)
        set(CURLOPT_SSL_VERIFYPEER, options.verifyTLS ? 1 : 0)
        set(CURLOPT_SSL_VERIFYHOST, options.verifyTLS ? 2 : 0)
        if rc == CURLE_OK { rc = inferd_curl_set_headers(easy, headers) }
        if request.method == .post {
            let body = request.body ?? Data()
            let text = String(decoding: body, as: UTF8.self)
            if rc == CURLE_OK { rc = inferd_curl_set_body(easy, text, body.count) }
        } else {
            set(CURLOPT_HTTPGET, 1)
        }
        if rc == CURLE_OK {
            rc = inferd_curl_set_callbacks(
                easy, transferBodyCallback, transferHeaderCallback, Unmanaged.passUnretained(callbacks).toOpaque())
        }
        return rc == CURLE_OK ? nil : String(cString: curl_easy_strerror(rc))
    }

    /// A failed transfer: "never reached the upstream" when no request byte was sent.
    private static func classify(_ code: CURLcode, easy: UnsafeMutableRawPointer) -> HTTPTransferError {
        let message = String(cString: curl_easy_strerror(code))
        let neverSent = inferd_curl_request_bytes(easy) == 0
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR:
            return .unreachable(message)
        case CURLE_OPERATION_TIMEDOUT where neverSent:
            return .unreachable(message)
        default:
            return neverSent ? .unreachable(message) : .transport(message)
        }
    }

    private static let initialized: Bool = {
        // CURL_GLOBAL_ALL (SSL | WIN32 = 3): once per process, before any handle.
        curl_global_init(3) == CURLE_OK
    }()

    static func globalInit() { _ = initialized }
}

/// The state the write callbacks work on, owned by one transfer's thread.
final class CallbackState {
    var easy: UnsafeMutableRawPointer?
    var splitter: LineSplitter
    let maxErrorBodyBytes: Int
    let onResponseStart: () -> Void
    let onLine: (String) -> Bool
    var receivedAny = false
    var lastByte = ContinuousClock.now
    var retryAfter: Int?
    var errorBody: [UInt8] = []
    var started = false
    var handlerStopped = false
    var failure: HTTPTransferError?
    var stopped: Bool { handlerStopped || failure != nil }

    init(
        maxLineBytes: Int, maxErrorBodyBytes: Int, onResponseStart: @escaping () -> Void,
        onLine: @escaping (String) -> Bool
    ) {
        splitter = LineSplitter(maxLineBytes: maxLineBytes)
        self.maxErrorBodyBytes = maxErrorBodyBytes
        self.onResponseStart = onResponseStart
        self.onLine = onLine
    }

    func header(_ bytes: UnsafeRawBufferPointer) {
        receivedAny = true
        lastByte = .now
        let line = String(decoding: bytes, as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            retryAfter = nil  // a new response (after a 1xx): its own headers count
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        if name == "retry-after", let seconds = Int(value), seconds >= 0 { retryAfter = seconds }
    }

    /// Returns false to abort the transfer.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        receivedAny = true
        lastByte = .now
        let status = easy.map { inferd_curl_response_code($0) } ?? 0
        guard (200..<300).contains(status) else {
            let room = maxErrorBodyBytes - errorBody.count
            if room > 0 { errorBody.append(contentsOf: bytes.prefix(room)) }
            return true
        }
        if !started {
            started = true
            onResponseStart()
        }
        do {
            if try !splitter.feed(bytes, onLine) {
                handlerStopped = true
                return false
            }
        } catch {
            failure = .lineTooLong(limit: splitter.maxLineBytes)
            return false
        }
        return true
    }

    /// Delivers an unterminated last line of a complete 2xx body; false when the handler stopped.
    func pendingLines() -> Bool {
        guard started, let last = splitter.remainder else { return true }
        return onLine(last)
    }
}

private func transferBodyCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context, let data else { return inferd_curl_write_abort() }
    let state = Unmanaged<CallbackState>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    return state.body(bytes) ? size * count : inferd_curl_write_abort()
}

private func transferHeaderCallback(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context, let data else { return inferd_curl_write_abort() }
    let state = Unmanaged<CallbackState>.fromOpaque(context).takeUnretainedValue()
    state.header(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}
