/// Collects headers or query arguments during one `MHD_get_connection_values` call.
final class KeyValueSink {
    var items: [(String, String)] = []
}
