import Engine
import Foundation
import GenerationVocabulary

/// Structured output over a remote engine: the format is sent upstream (`response_format`, or
/// llama.cpp's `grammar` extension) instead of constraining tokens here, since the tokens are
/// sampled there. Made by `OpenAIRemoteBackend.makeConstraint` from the format's identity
/// (`json_schema:<schema>`, `json_object`, `grammar:<GBNF>`), which names the format in full.
/// inferd's own handling of the answer's text (partial and validated values) is unchanged.
struct UpstreamFormat: GenerationConstraint {
    enum Kind: Sendable, Equatable {
        /// The schema's JSON text.
        case jsonSchema(String)
        case jsonObject
        /// GBNF source.
        case grammar(String)
    }

    let kind: Kind
    let identity: String
    /// The format as a grammar, to check the upstream's answer against (`matches`).
    let grammar: CompiledGrammar

    init?(identity: String, grammar: CompiledGrammar) {
        self.identity = identity
        self.grammar = grammar
        if identity == "json_object" {
            kind = .jsonObject
        } else if identity.hasPrefix("json_schema:") {
            kind = .jsonSchema(String(identity.dropFirst("json_schema:".count)))
        } else if identity.hasPrefix("grammar:") {
            kind = .grammar(String(identity.dropFirst("grammar:".count)))
        } else {
            return nil
        }
    }

    /// Whether `text` is a complete answer of the format: the upstream constrained its sampling,
    /// but inferd checks the text itself, so a validated `value` never rests on the upstream's
    /// word (an upstream that ignores the format gets only partial values).
    func matches(_ text: String) -> Bool {
        let matcher = GrammarMatcher(grammar: grammar)
        return matcher.accept(bytes: text.utf8) && matcher.canEnd
    }

    /// Never used: the remote backend samples nothing. Allows every token.
    func makeProcessor() -> any LogitsProcessor { Unconstrained() }

    /// Adds the format to an upstream request's body. A schema goes as OpenAI's
    /// `response_format: {type: json_schema, json_schema: {name, schema, strict}}`; JSON mode as
    /// `{type: json_object}`; GBNF as a top-level `grammar` (llama.cpp's server and inferd read it;
    /// vLLM reads `guided_grammar` in its own dialect, so a grammar over vLLM is not supported).
    /// The schema goes as its own text (`UpstreamJSON.Raw`), so its keys keep their order
    /// (engines generate properties in schema order; the body's encoder sorts keys).
    func apply(to body: inout [String: Any]) {
        switch kind {
        case .jsonObject:
            body["response_format"] = ["type": "json_object"]
        case .jsonSchema(let text):
            body["response_format"] = [
                "type": "json_schema",
                "json_schema": ["name": "response", "schema": UpstreamJSON.Raw(text: text), "strict": true],
            ]
        case .grammar(let source):
            body["grammar"] = source
        }
    }

    private final class Unconstrained: LogitsProcessor {
        func process(logits: UnsafeMutableBufferPointer<Float>) {}
        func accept(token: Int32) -> Bool { true }
        var mustEnd: Bool { false }
        var canEnd: Bool { true }
    }
}
