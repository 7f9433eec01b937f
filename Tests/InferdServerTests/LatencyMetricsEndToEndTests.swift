import Foundation
import Telemetry
import TestSupport
import Testing

@testable import InferdServer

/// The latency histograms a scraper reads from `/metrics`, by route and priority, fed by real
/// requests through every surface.
@Suite struct LatencyMetricsEndToEndTests {
    /// `name{labels}` → value, for the lines of a Prometheus text body.
    static func samples(_ text: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else {
                continue
            }
            out[String(line[..<space])] = v
        }
        return out
    }

    @Test func eachRouteRecordsItsFirstTokenGapsQueueWaitAndDuration() async throws {
        try await RunningServer.with { s in
            let generated = try await offPool { () -> Int in
                let r = try s.client().postJSON(
                    "/v1/generations",
                    #"{"prompt": "Count from 1 to 50.", "options": {"temperature": 0, "max_tokens": 12, "ignore_eos": true}}"#
                )
                return (r.json?["usage"] as? [String: Any])?["completion_tokens"] as? Int ?? -1
            }
            #expect(generated == 12)
            let model = try SharedModel.engine().modelName
            let chat = try await offPool {
                try s.client().postJSON(
                    "/v1/chat/completions",
                    jsonString([
                        "model": model, "messages": [["role": "user", "content": "Hi"]], "max_tokens": 4,
                        "priority": "background",
                    ]))
            }
            #expect(chat.status == 200, "\(chat.text)")
            let session = try await offPool {
                try s.client().postJSON("/v1/sessions", "{}").json?["id"] as? String ?? ""
            }
            _ = try await offPool {
                try s.client().postJSON(
                    "/v1/sessions/\(session)/responses", #"{"prompt": "Hello", "options": {"max_tokens": 4}}"#)
            }
            let text = try await offPool { try s.client().request("GET", "/metrics").text }
            let m = Self.samples(text)
            for name in [
                "inferd_time_to_first_token_seconds", "inferd_inter_token_latency_seconds",
                "inferd_queue_wait_seconds", "inferd_request_duration_seconds",
            ] {
                #expect(text.contains("# TYPE \(name) histogram"), "missing \(name)")
            }
            func series(_ name: String, _ route: String, _ priority: String = "interactive") -> String {
                "\(name){priority=\"\(priority)\",route=\"\(route)\"}"
            }
            let native = (
                ttft: m[series("inferd_time_to_first_token_seconds_sum", "generations")] ?? -1,
                wait: m[series("inferd_queue_wait_seconds_sum", "generations")] ?? -1,
                total: m[series("inferd_request_duration_seconds_sum", "generations")] ?? -1
            )
            #expect(m[series("inferd_time_to_first_token_seconds_count", "generations")] == 1)
            #expect(m[series("inferd_request_duration_seconds_count", "generations")] == 1)
            #expect(m[series("inferd_queue_wait_seconds_count", "generations")] == 1)
            // Twelve tokens, each visible: eleven gaps after the first.
            #expect(m[series("inferd_inter_token_latency_seconds_count", "generations")] == 11)
            #expect(0 <= native.wait && native.wait <= native.ttft && native.ttft <= native.total, "\(native)")
            let gaps = m[series("inferd_inter_token_latency_seconds_sum", "generations")] ?? -1
            #expect(gaps > 0 && native.ttft + gaps <= native.total)
            // Cumulative buckets end at the count.
            #expect(
                m["inferd_request_duration_seconds_bucket{le=\"+Inf\",priority=\"interactive\",route=\"generations\"}"]
                    == 1)
            // The other surfaces, each under its own route and priority.
            #expect(m[series("inferd_request_duration_seconds_count", "chat_completions", "background")] == 1)
            #expect(m[series("inferd_time_to_first_token_seconds_count", "chat_completions", "background")] == 1)
            #expect(m[series("inferd_request_duration_seconds_count", "sessions")] == 1)
            #expect(m[series("inferd_time_to_first_token_seconds_count", "sessions")] == 1)
            #expect(m[series("inferd_request_duration_seconds_count", "chat_completions")] == nil)
            // The session keeps its KV cache: a share of the budget, not nothing and not all of it.
            let kv = m["inferd_kv_cache_utilization"] ?? -1
            #expect(kv > 0 && kv < 1, "\(kv)")
        }
    }
}
