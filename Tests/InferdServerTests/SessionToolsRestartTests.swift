import Foundation
import TestSupport
import Testing

/// A session's tool calls outlive the process: the release binary makes a call in a session
/// (`tool_choice: required`, the default model), is killed with SIGKILL, and the next process
/// over the same data_dir shows the call in the transcript with its id and takes a result for it,
/// which it could not if the call had been lost or re-read as plain text.
@Suite(.serialized) struct SessionToolsRestartTests {
    typealias ServerProcess = SessionsRestartTests.ServerProcess

    static var tools: [[String: Any]] {
        [
            [
                "type": "function", "name": "get_weather",
                "parameters": [
                    "type": "object", "properties": ["city": ["type": "string", "maxLength": 20]], "required": ["city"],
                ] as [String: Any],
            ]
        ]
    }

    @Test func aCallSurvivesAKillAndItsResultIsTakenAfter() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-tools-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (sessionID, callID, arguments) = try await offPool { () -> (String, String, String) in
            let server = try ServerProcess(dataDir: dir)
            let created = try server.client().postJSON("/v1/sessions", #"{"instructions": "You can look up weather."}"#)
            let id = try #require(created.json?["id"] as? String, "\(created.text)")
            let turn = try server.client().postJSON(
                "/v1/sessions/\(id)/responses",
                jsonString([
                    "prompt": "What is the weather in Paris?", "tools": Self.tools, "tool_choice": "required",
                    "parallel_tool_calls": false, "options": ["temperature": 0, "max_tokens": 60],
                ]))
            let call = try #require((turn.json?["tool_calls"] as? [[String: Any]])?.first, "\(turn.text)")
            server.kill9()
            return (id, try #require(call["id"] as? String), try #require(call["arguments"] as? String))
        }
        try await offPool {
            let server = try ServerProcess(dataDir: dir)
            defer { server.stop() }
            let got = try server.client().request("GET", "/v1/sessions/\(sessionID)")
            let transcript = got.json?["transcript"] as? [[String: Any]] ?? []
            let response = try #require(transcript.last, "\(got.text)")
            let kept = try #require((response["tool_calls"] as? [[String: Any]])?.first, "\(response)")
            #expect(kept["id"] as? String == callID && kept["name"] as? String == "get_weather")
            #expect(kept["arguments"] as? String == arguments)
            let next = try server.client().postJSON(
                "/v1/sessions/\(sessionID)/responses",
                jsonString([
                    "tool_results": [["tool_call_id": callID, "content": "18 degrees"]], "tools": Self.tools,
                    "tool_choice": "none", "options": ["temperature": 0, "max_tokens": 12],
                ]))
            #expect(next.status == 200 && next.json?["tool_calls"] == nil, "\(next.text)")
            let after = try server.client().request("GET", "/v1/sessions/\(sessionID)")
            let types = (after.json?["transcript"] as? [[String: Any]] ?? []).map { $0["type"] as? String ?? "" }
            #expect(types == ["instructions", "prompt", "response", "tool_result", "response"], "\(types)")
        }
    }
}
