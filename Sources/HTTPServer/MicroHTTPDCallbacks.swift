import CMicroHTTPD

// The @convention(c) entry points libmicrohttpd calls, on its own threads. They live in a
// library file, never in main.swift, whose globals are main-actor isolated.

let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, url, method, version, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    // First call only: the head is still in libmicrohttpd's read buffer, parsed in place.
    let dropped = conCls.pointee == nil ? Int(inferd_mhd_head_dropped_bytes(connection, method, version)) : 0
    return server.handleAccess(
        connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "GET", version: version.map { String(cString: $0) } ?? "",
        droppedAfterHeader: dropped - 1, upload: uploadData, uploadSize: uploadDataSize, requestContext: conCls)
}

/// libmicrohttpd's messages (MHD_USE_ERROR_LOG). Only the two about a malformed `Content-Length`
/// matter (see `HTTPServer.answerMalformedLength`); the rest are dropped, as before the logger.
let microHTTPDLoggerCallback: MHD_LogCallback = { cls, format, _ in
    guard let cls, let format else { return }
    guard strstr(format, "Content-Length") != nil else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.answerMalformedLength(tooLarge: strstr(format, "Too large") != nil)
}

let completedCallback: MHD_RequestCompletedCallback = { cls, connection, conCls, code in
    guard let cls else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.connectionGuard.requestCompleted(HTTPServer.connectionID(connection))
    guard let conCls, let raw = conCls.pointee else { return }
    conCls.pointee = nil
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
    server.requestCompleted(exchange, code: code)
}

let notifyConnectionCallback: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.connectionNotified(connection, started: code == .CONNECTION_NOTIFY_STARTED)
}

let streamReaderCallback: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer else { return inferd_mhd_reader_end_with_error() }
    let exchange = Unmanaged<Exchange>.fromOpaque(cls).takeUnretainedValue()
    return exchange.read(into: buffer, max: max)
}

let streamFreeCallback: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<Exchange>.fromOpaque(cls).release()
}

let keyValueIteratorCallback: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return .YES }
    let sink = Unmanaged<KeyValueSink>.fromOpaque(cls).takeUnretainedValue()
    func text(_ p: UnsafePointer<CChar>, _ n: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }
    sink.items.append((text(key, keySize), value.map { text($0, valueSize) } ?? ""))
    return .YES
}
