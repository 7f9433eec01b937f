import CMicroHTTPD

// The @convention(c) entry points libmicrohttpd calls, on its own threads. They live in a
// library file, never in main.swift, whose globals are main-actor isolated.

let accessHandlerCallback: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let uploadDataSize, let conCls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.handleAccess(
        connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "GET", upload: uploadData, uploadSize: uploadDataSize,
        requestContext: conCls)
}

let completedCallback: MHD_RequestCompletedCallback = { cls, _, conCls, code in
    guard let cls, let conCls, let raw = conCls.pointee else { return }
    conCls.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
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

let keyValueIteratorCallback: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let sink = Unmanaged<KeyValueSink>.fromOpaque(cls).takeUnretainedValue()
    sink.items.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return .YES
}
