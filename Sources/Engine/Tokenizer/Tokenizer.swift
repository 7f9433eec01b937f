/// The tokenizer of a model, reproducing llama.cpp's tokenization: byte-level BPE (GPT-2 family:
/// SmolLM2, Llama 3, Qwen 2.5/3) or SentencePiece (Gemma 3, Llama 2 family) behind one type.
///
/// Encoding: special-token spellings are cut out of the text first (control tokens only where
/// allowed, user-defined tokens always, as llama.cpp does), then the model encodes each stretch
/// between them. Copies share the tables.
public struct Tokenizer: Sendable {
    let model: any TokenizerModel
    var table: TokenTable { model.table }
    public let bosID: Int32?
    public let eosID: Int32?
    /// `tokenizer.ggml.padding_token_id`, when the file names one.
    public internal(set) var paddingID: Int32? = nil
    /// Special tokens after which whitespace is dropped when they are cut out of text (llama.cpp's
    /// `rstrip` attribute, which it gives Phi-3's special tokens: `Tokenizer+GGUF.swift`).
    var rightStrippedIDs: Set<Int32> = []
    /// Whether a raw prompt should start with BOS: `tokenizer.ggml.add_bos_token`, or when it is
    /// absent llama.cpp's default (true for SentencePiece and for the Llama 3 pre-tokenizer).
    public let addsBOS: Bool
    /// Tokens that end generation: the EOS token, the end-of-turn and end-of-message tokens when
    /// the model names them, and control tokens spelled like a known end of turn.
    public let endOfGenerationIDs: Set<Int32>

    /// Control-token spellings that end a turn in common chat formats.
    static let endOfGenerationSpellings: Set<String> = [
        "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>",
    ]

    public var vocabularySize: Int { table.count }

    /// Builds a byte-level BPE tokenizer from the vocabulary arrays of a GGUF file.
    ///
    /// - Parameters:
    ///   - tokens: `tokenizer.ggml.tokens`, in byte-level (GPT-2) spelling.
    ///   - merges: `tokenizer.ggml.merges`, "left right" per entry, by rank.
    ///   - tokenTypes: `tokenizer.ggml.token_type` (empty means all normal).
    ///   - preTokenizer: `tokenizer.ggml.pre`.
    ///   - eotID, eomID: `tokenizer.ggml.eot_token_id` / `eom_token_id` when present.
    ///   - addBOS: `tokenizer.ggml.add_bos_token` when present.
    public init(
        tokens: [String], merges: [String], tokenTypes: [Int32], bosID: Int32?, eosID: Int32?,
        preTokenizer: String, eotID: Int32? = nil, eomID: Int32? = nil, addBOS: Bool? = nil
    ) throws {
        guard let pre = PreTokenizer(name: preTokenizer) else {
            throw TokenizerError.unknownPreTokenizer(preTokenizer)
        }
        let model = try BPEModel(tokens: tokens, merges: merges, tokenTypes: tokenTypes, preTokenizer: pre)
        try self.init(model: model, bosID: bosID, eosID: eosID, eotID: eotID, eomID: eomID, addBOS: addBOS)
    }

    /// Builds a SentencePiece tokenizer from the vocabulary arrays of a GGUF file.
    ///
    /// - Parameters:
    ///   - tokens: `tokenizer.ggml.tokens`, spaces spelled `▁`, bytes spelled `<0xNN>`.
    ///   - scores: `tokenizer.ggml.scores` (empty means all zero).
    ///   - addSpacePrefix: `tokenizer.ggml.add_space_prefix` (llama.cpp's default: true).
    ///   - unknownID: `tokenizer.ggml.unknown_token_id`.
    public init(
        sentencePieceTokens tokens: [String], scores: [Float], tokenTypes: [Int32], bosID: Int32?, eosID: Int32?,
        unknownID: Int32? = nil, addSpacePrefix: Bool = true, eotID: Int32? = nil, eomID: Int32? = nil,
        addBOS: Bool? = nil
    ) throws {
        if let unknownID, unknownID < 0 || Int(unknownID) >= tokens.count {
            throw TokenizerError.invalidVocabulary("unknown token id \(unknownID) outside 0..<\(tokens.count)")
        }
        let model = try SPMModel(
            tokens: tokens, scores: scores, tokenTypes: tokenTypes, addsSpacePrefix: addSpacePrefix,
            unknownID: unknownID)
        try self.init(model: model, bosID: bosID, eosID: eosID, eotID: eotID, eomID: eomID, addBOS: addBOS)
    }

    init(
        model: any TokenizerModel, bosID: Int32?, eosID: Int32?, eotID: Int32?, eomID: Int32?, addBOS: Bool?
    ) throws {
        let table = model.table
        for (name, id) in [("bos", bosID), ("eos", eosID), ("eot", eotID), ("eom", eomID)] {
            if let id, id < 0 || Int(id) >= table.count {
                throw TokenizerError.invalidVocabulary("\(name) token id \(id) outside 0..<\(table.count)")
            }
        }
        let addsBOS = addBOS ?? model.addsBOSByDefault
        if addsBOS && bosID == nil {
            throw TokenizerError.invalidVocabulary("the vocabulary asks for BOS but names no BOS token")
        }
        self.model = model
        self.bosID = bosID
        self.eosID = eosID
        self.addsBOS = addsBOS
        var endIDs = Set([eosID, eotID, eomID].compactMap { $0 })
        for (index, text) in table.texts.enumerated()
        where table.types[index] == .control && Self.endOfGenerationSpellings.contains(text) {
            endIDs.insert(Int32(index))
        }
        self.endOfGenerationIDs = endIDs
    }

    /// Encodes text. With `parseSpecial`, spellings of control tokens in the text become those
    /// tokens; without it they are ordinary text. User-defined tokens match either way, as in
    /// llama.cpp. No BOS is added (see `addsBOS`).
    public func encode(_ text: String, parseSpecial: Bool = false) -> [Int32] {
        let count = text.utf8.count
        return encodeJoined(
            Array(text.utf8), segments: [.raw(0..<count)], specialRanges: parseSpecial ? [0..<count] : [])
    }

    /// Encodes a prompt: `.special` pieces become their id; runs of adjacent `.text` and
    /// `.template` pieces are joined and encoded as one stretch, in which control-token spellings
    /// become tokens only where they lie wholly inside `.template` text.
    public func encode(_ pieces: [PromptPiece]) -> [Int32] {
        var bytes: [UInt8] = []
        var segments: [Segment] = []
        var specialRanges: [Range<Int>] = []
        var runStart = 0
        func closeRun() {
            if bytes.count > runStart { segments.append(.raw(runStart..<bytes.count)) }
        }
        for piece in pieces {
            switch piece {
            case .text(let text):
                bytes.append(contentsOf: text.utf8)
            case .template(let text):
                let start = bytes.count
                bytes.append(contentsOf: text.utf8)
                if let last = specialRanges.last, last.upperBound == start {
                    specialRanges[specialRanges.count - 1] = last.lowerBound..<bytes.count
                } else if bytes.count > start {
                    specialRanges.append(start..<bytes.count)
                }
            case .special(let id):
                closeRun()
                segments.append(.token(id))
                runStart = bytes.count
            }
        }
        closeRun()
        return encodeJoined(bytes, segments: segments, specialRanges: specialRanges)
    }

    /// The raw bytes a token contributes to decoded text; for control and user-defined tokens,
    /// their spelling.
    public func tokenBytes(_ id: Int32) -> [UInt8] {
        guard id >= 0 && Int(id) < table.count else { return [] }
        return Array(table.pieces[Int(id)])
    }

    /// The token's spelling as stored in the vocabulary (byte-level or `▁` form for normal tokens).
    public func tokenText(_ id: Int32) -> String? {
        guard id >= 0 && Int(id) < table.count else { return nil }
        return table.texts[Int(id)]
    }

    /// The id of the token with exactly this vocabulary spelling, if any (byte for byte; the
    /// last id when a spelling repeats, as in llama.cpp).
    public func tokenID(spelledAs text: String) -> Int32? {
        table.lookup.id(text)
    }

    /// Decodes tokens to text as llama.cpp's `llama_detokenize` does (without its optional
    /// clean-up of spaces): control tokens are left out unless `renderSpecial`, and when the
    /// model adds a space prefix, one leading space of the first token is dropped. Invalid UTF-8
    /// (a character cut by the end of `ids`) becomes U+FFFD.
    public func decode(_ ids: [Int32], renderSpecial: Bool = false) -> String {
        var bytes: [UInt8] = []
        for (index, id) in ids.enumerated() {
            let start = bytes.count
            appendPiece(id, renderSpecial: renderSpecial, to: &bytes)
            if index == 0 && model.addsSpacePrefix && bytes.count > start && bytes[start] == 0x20 {
                bytes.remove(at: start)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public func isControl(_ id: Int32) -> Bool {
        table.type(id) == .control
    }

    /// Appends the bytes `id` contributes to decoded text (llama.cpp's token-to-piece rules).
    func appendPiece(_ id: Int32, renderSpecial: Bool, to bytes: inout [UInt8]) {
        guard let type = table.type(id) else { return }
        switch type {
        case .normal, .undefined, .userDefined, .byte:
            bytes.append(contentsOf: table.pieces[Int(id)])
        case .control, .unknown:
            if renderSpecial { bytes.append(contentsOf: table.pieces[Int(id)]) }
        case .unused:
            break
        }
    }
}
