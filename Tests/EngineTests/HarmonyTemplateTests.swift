import Foundation
import Testing

@testable import Engine

/// gpt-oss's chat template (`Fixtures/templates/gpt-oss.jinja`: OpenAI's `chat_template.jinja` as
/// llama.cpp keeps it, `models/templates/openai-gpt-oss-120b.jinja` at commit 0c1e57098) rendered
/// by inferd's interpreter. The expected prompts are written from the harmony format's
/// documentation (OpenAI cookbook, "OpenAI harmony response format": messages
/// `<|start|>{header}<|message|>{content}<|end|>`, the system message's identity, knowledge
/// cutoff, current date, reasoning effort and channel line, the developer message's
/// `# Instructions`, earlier assistant turns in the `final` channel, the last one ending in
/// `<|return|>`, the generation prompt `<|start|>assistant`) and the template's own layout where
/// it adds to it (two newlines after the instructions).
@Suite struct HarmonyTemplateTests {
    static let controls = [
        "<|startoftext|>", "<|return|>", "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>",
        "<|call|>",
    ]
    static let date = Date(timeIntervalSince1970: 1_751_112_000)  // 2025-06-28 12:00 UTC, the documentation's

    static func template() throws -> ChatTemplate {
        let tokenizer = try ChatTemplateFamiliesTests.tokenizer(
            bos: "<|startoftext|>", eos: "<|return|>", controls: controls)
        return try ChatTemplate(
            source: try ChatTemplateFamiliesTests.source("gpt-oss"), origin: "gpt-oss", tokenizer: tokenizer)
    }

    static func system(_ effort: String) -> String {
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
            + "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: \(effort)\n\n"
            + "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>"
    }

    @Test func systemBecomesTheDeveloperMessage() throws {
        let prompt = try Self.template().renderText(
            [
                ChatMessage(role: .system, content: "Always respond in riddles"),
                ChatMessage(role: .user, content: "What is 2 + 2?"),
            ], arguments: #"{"reasoning_effort": "high"}"#, now: Self.date)
        #expect(
            prompt == Self.system("high")
                + "<|start|>developer<|message|># Instructions\n\nAlways respond in riddles\n\n<|end|>"
                + "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant")
    }

    @Test func earlierAnswersAreFinalChannelMessages() throws {
        let template = try Self.template()
        let conversation = [
            ChatMessage(role: .user, content: "What is 2 + 2?"), ChatMessage(role: .assistant, content: "2 + 2 = 4."),
        ]
        let next = try template.renderText(
            conversation + [ChatMessage(role: .user, content: "And 3 + 3?")], now: Self.date)
        #expect(
            next == Self.system("medium") + "<|start|>user<|message|>What is 2 + 2?<|end|>"
                + "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|end|>"
                + "<|start|>user<|message|>And 3 + 3?<|end|><|start|>assistant")
        // A conversation ending in the assistant's answer (no generation prompt) ends in <|return|>.
        let finished = try template.renderText(conversation, addGenerationPrompt: false, now: Self.date)
        #expect(
            finished == Self.system("medium") + "<|start|>user<|message|>What is 2 + 2?<|end|>"
                + "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>")
    }

    /// The date comes from the caller (the request's time, in UTC), and message text that spells
    /// a control token stays text.
    @Test func dateIsTheCallersAndContentStaysText() throws {
        let template = try Self.template()
        let pieces = try template.render(
            [ChatMessage(role: .user, content: "say <|end|>")], now: Date(timeIntervalSince1970: 86_400 * 365))
        let text = pieces.map { piece -> String in
            switch piece {
            case .text(let t), .template(let t): t
            case .special: ""
            }
        }.joined()
        #expect(text.contains("Current date: 1971-01-01\n"))
        #expect(pieces.contains(.text("say <|end|>")))
        #expect(!pieces.contains { if case .template(let t) = $0 { t.contains("say") } else { false } })
    }

    @Test func strftimeDirectives() throws {
        let time = JinjaTime(Date(timeIntervalSince1970: 1_751_112_000 + 3_723))  // Saturday 2025-06-28 13:02:03
        #expect(try time.formatted("%Y-%m-%d") == "2025-06-28")
        #expect(try time.formatted("%d %b %Y") == "28 Jun 2025")
        #expect(
            try time.formatted("%A %a %B %H:%M:%S %I%p %j %-m/%-d %y %%")
                == "Saturday Sat June 13:02:03 01PM 179 6/28 25 %")
        #expect(throws: JinjaError.self) { try time.formatted("%Q") }
    }
}
