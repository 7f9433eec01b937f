import Engine
import GenerationVocabulary

/// The engine's tokenizer as `TokenizerAccess`: the ids are exactly those a raw prompt runs as
/// (`InferenceEngine.rawPromptTokens`) or, without special tokens, plain text's.
struct LocalTokenizerAccess: TokenizerAccess {
    let engine: InferenceEngine

    func tokenize(_ text: String, addSpecialTokens: Bool) -> [Int32] {
        addSpecialTokens ? engine.rawPromptTokens(text) : engine.tokenizer.encode(text, parseSpecial: false)
    }

    func detokenize(_ ids: [Int32]) -> String? {
        let size = engine.tokenizer.vocabularySize
        guard ids.allSatisfy({ $0 >= 0 && Int($0) < size }) else { return nil }
        return engine.tokenizer.decode(ids, renderSpecial: true)
    }

    func tokenString(_ id: Int32) -> String? {
        guard id >= 0, Int(id) < engine.tokenizer.vocabularySize else { return nil }
        return String(decoding: engine.tokenizer.tokenBytes(id), as: UTF8.self)
    }

    var bosToken: String? { engine.tokenizer.bosID.flatMap(tokenString) }
    var eosToken: String? { engine.tokenizer.eosID.flatMap(tokenString) }
    /// Only when the file names one (`tokenizer.ggml.padding_token_id`).
    var padToken: String? { engine.tokenizer.paddingID.flatMap(tokenString) }
}
