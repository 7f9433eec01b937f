import Engine
import Foundation
import TestSupport
import Testing

@testable import InferdServer

/// A model without a chat template still serves raw prompts; its chat routes answer 400
/// `invalid_request` naming the `chat_template` setting. The model is a copy of
/// `Tests/Fixtures/reference/tiny/tiny-llama3.gguf` (llama architecture, random weights, no
/// `tokenizer.chat_template`) written with `GGUFWriter`, its pre-tokenizer named `gpt-2` so this
/// branch's tokenizer loads it.
@Suite struct ChatTemplateEndToEndTests {
    static let tinyPath: Result<String, any Error> = Result {
        let source = TestPaths.referenceRoot.appendingPathComponent("tiny/tiny-llama3.gguf").path
        guard FileManager.default.fileExists(atPath: source) else {
            throw ClientError(description: "tiny model missing at \(source)")
        }
        let file = try GGUFFile(path: source)
        var writer = GGUFWriter()
        for key in file.metadataKeys where key != "tokenizer.chat_template" {
            guard let value = file.metadata[key] else { continue }
            writer.add(key, key == "tokenizer.ggml.pre" ? .string("gpt-2") : value)
        }
        for name in file.tensorNames {
            let info = try file.tensor(name)
            writer.addTensor(name: name, shape: info.shape, type: info.type, data: Array(try file.tensorData(name)))
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "inferd-tiny-no-template-\(getpid()).gguf"
        ).path
        try writer.write(to: path)
        return path
    }

    static func tinyEngine(chatTemplate: String? = nil) throws -> InferenceEngine {
        try InferenceEngine(path: try tinyPath.get(), threads: 1, chatTemplate: chatTemplate)
    }

    @Test func chatRequestsToAModelWithoutTemplateGet400NamingTheSetting() async throws {
        let engine = try Self.tinyEngine()
        #expect(engine.template == nil)
        let s = try RunningServer.start(state: .ready(engine))
        defer { Task { await s.server.shutdown() } }
        func post(_ path: String, _ body: String) async throws -> RawResponse {
            try await offPool { try s.client(timeout: 60).postJSON(path, body) }
        }
        let model = engine.modelName
        let chat = try await post(
            "/v1/chat/completions",
            jsonString(["model": model, "messages": [["role": "user", "content": "hi"]], "max_tokens": 2]))
        #expect(chat.status == 400)
        let error = chat.json?["error"] as? [String: Any] ?? [:]
        #expect(error["type"] as? String == "invalid_request_error")
        #expect((error["message"] as? String ?? "").contains("chat_template"), "\(chat.text)")
        #expect((error["message"] as? String ?? "").contains("--chat-template"), "\(chat.text)")

        let native = try await post("/v1/generations", jsonString(["prompt": "hi", "options": ["max_tokens": 2]]))
        #expect(native.status == 400, "\(native.text)")
        #expect(native.text.contains("chat_template"))

        // The raw-prompt route needs no template.
        let raw = try await post("/v1/completions", jsonString(["model": model, "prompt": "hello", "max_tokens": 2]))
        #expect(raw.status == 200, "\(raw.text)")
    }

    @Test func anOverrideGivesTheModelATemplate() throws {
        let engine = try Self.tinyEngine(chatTemplate: "chatml")
        #expect(engine.template?.origin == "built-in chatml")
        #expect(try !engine.promptTokens(for: [ChatMessage(role: .user, content: "hi")]).isEmpty)
        #expect(throws: ChatTemplateError.self) { try Self.tinyEngine(chatTemplate: "{% if %}") }
    }

    @Test func theSettingReadsATemplateFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-template-\(getpid()).jinja")
            .path
        try "{{ messages[0].content }}".write(toFile: path, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var config = ServerConfiguration()
        #expect(try config.chatTemplateOverride() == nil)
        config.chatTemplate = "llama3"
        #expect(try config.chatTemplateOverride() == "llama3")
        config.chatTemplate = "@" + path
        #expect(try config.chatTemplateOverride() == "{{ messages[0].content }}")
        config.chatTemplate = "@/nonexistent/template.jinja"
        #expect(throws: ConfigurationError.self) { try config.chatTemplateOverride() }
        let loaded = try ServerConfiguration.load(
            arguments: ["--chat-template", "gemma"], environment: [:], defaultFile: "/nonexistent.json")
        #expect(loaded.chatTemplate == "gemma")
        let fromEnvironment = try ServerConfiguration.load(
            arguments: [], environment: ["INFERD_CHAT_TEMPLATE": "qwen"], defaultFile: "/nonexistent.json")
        #expect(fromEnvironment.chatTemplate == "qwen")
    }
}
