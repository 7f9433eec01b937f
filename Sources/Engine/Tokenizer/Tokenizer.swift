/// Byte-level BPE tokenizer (GPT-2 family) that reproduces llama.cpp's tokenization.
///
/// Encoding: optional special-token matching, then the pre-tokenizer splits the text into
/// words, and each word's bytes are merged by rank into tokens. Copies share the tables.
public struct Tokenizer: Sendable {
    let vocabulary: BPEVocabulary
    let preTokenizer: PreTokenizer
    public let bosID: Int32?
    public let eosID: Int32?
    /// Tokens that end generation: the EOS token, the end-of-turn and end-of-message tokens when
    /// the model names them, and control tokens spelled like a known end of turn.
    public let endOfGenerationIDs: Set<Int32>

    /// Control-token spellings that end a turn in common chat formats.
    static let endOfGenerationSpellings: Set<String> = [
        "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<end_of_turn>",
    ]

    public var vocabularySize: Int { vocabulary.tokenCount }

    /// Builds a tokenizer from the vocabulary arrays of a GGUF file.
    ///
    /// - Parameters:
    ///   - tokens: `tokenizer.ggml.tokens`, in byte-level (GPT-2) spelling.
    ///   - merges: `tokenizer.ggml.merges`, "left right" per entry, by rank.
    ///   - tokenTypes: `tokenizer.ggml.token_type` (empty means all normal).
    ///   - preTokenizer: `tokenizer.ggml.pre`.
    ///   - eotID, eomID: `tokenizer.ggml.eot_token_id` / `eom_token_id` when present.
    public init(
        tokens: [String], merges: [String], tokenTypes: [Int32], bosID: Int32?, eosID: Int32?,
        preTokenizer: String, eotID: Int32? = nil, eomID: Int32? = nil
    ) throws {
        guard let pre = PreTokenizer(name: preTokenizer) else {
            throw TokenizerError.unknownPreTokenizer(preTokenizer)
        }
        let vocabulary = try BPEVocabulary(tokens: tokens, merges: merges, tokenTypes: tokenTypes)
        for (name, id) in [("bos", bosID), ("eos", eosID), ("eot", eotID), ("eom", eomID)] {
            if let id, id < 0 || Int(id) >= tokens.count {
                throw TokenizerError.invalidVocabulary("\(name) token id \(id) outside 0..<\(tokens.count)")
            }
        }
        self.vocabulary = vocabulary
        self.preTokenizer = pre
        self.bosID = bosID
        self.eosID = eosID
        var endIDs = Set([eosID, eotID, eomID].compactMap { $0 })
        for (index, text) in tokens.enumerated()
        where vocabulary.tokenTypes[index] == .control && Self.endOfGenerationSpellings.contains(text) {
            endIDs.insert(Int32(index))
        }
        self.endOfGenerationIDs = endIDs
    }

    /// Encodes text. With `parseSpecial`, spellings of control tokens in the text become those
    /// tokens; without it they are ordinary text. User-defined tokens match either way, as in
    /// llama.cpp. No BOS is added.
    public func encode(_ text: String, parseSpecial: Bool = false) -> [Int32] {
        var output: [Int32] = []
        var scratch = EncodingScratch()
        var utf8 = Array(text.utf8)
        utf8.withUnsafeMutableBufferPointer { buffer in
            encodeBytes(UnsafeBufferPointer(buffer), parseSpecial: parseSpecial, scratch: &scratch, into: &output)
        }
        return output
    }

    /// Encodes a prompt: `.special` pieces become their id; runs of adjacent `.text` pieces are
    /// joined and encoded without recognising special tokens.
    public func encode(_ pieces: [PromptPiece]) -> [Int32] {
        var output: [Int32] = []
        var scratch = EncodingScratch()
        var pendingText = ""
        func flush() {
            if pendingText.isEmpty { return }
            var utf8 = Array(pendingText.utf8)
            utf8.withUnsafeMutableBufferPointer { buffer in
                encodeBytes(UnsafeBufferPointer(buffer), parseSpecial: false, scratch: &scratch, into: &output)
            }
            pendingText = ""
        }
        for piece in pieces {
            switch piece {
            case .text(let text):
                pendingText += text
            case .special(let id):
                flush()
                output.append(id)
            case .template(let text):
                // Temporary (the tokenizers branch owns this): control-token spellings become
                // tokens; the text around them joins the pending text.
                var utf8 = Array(text.utf8)
                utf8.withUnsafeMutableBufferPointer { buffer in
                    let bytes = UnsafeBufferPointer(buffer)
                    var segments: [Segment] = [.raw(0..<bytes.count)]
                    for special in vocabulary.specialTokens {
                        segments = partition(segments, bytes: bytes, by: special.bytes, id: special.id)
                    }
                    for segment in segments {
                        switch segment {
                        case .token(let id):
                            flush()
                            output.append(id)
                        case .raw(let range):
                            pendingText += String(decoding: bytes[range], as: UTF8.self)
                        }
                    }
                }
            }
        }
        flush()
        return output
    }

    /// The raw bytes a token stands for; for control and user-defined tokens, their spelling.
    public func tokenBytes(_ id: Int32) -> [UInt8] {
        guard id >= 0 && Int(id) < vocabulary.tokenCount else { return [] }
        return vocabulary.tokenBytes[Int(id)]
    }

    /// The token's spelling as stored in the vocabulary (byte-level form for normal tokens).
    public func tokenText(_ id: Int32) -> String? {
        guard id >= 0 && Int(id) < vocabulary.tokenCount else { return nil }
        return vocabulary.tokenTexts[Int(id)]
    }

    /// The id of the token with exactly this vocabulary spelling, if any.
    public func tokenID(spelledAs text: String) -> Int32? {
        vocabulary.tokenTexts.firstIndex(of: text).map { Int32($0) }
    }

    /// Decodes tokens to text. Control tokens are left out unless `renderSpecial`; invalid UTF-8
    /// (a character cut by the end of `ids`) becomes U+FFFD.
    public func decode(_ ids: [Int32], renderSpecial: Bool = false) -> String {
        var bytes: [UInt8] = []
        for id in ids {
            appendPiece(id, renderSpecial: renderSpecial, to: &bytes)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public func isControl(_ id: Int32) -> Bool {
        vocabulary.type(id) == .control
    }

    /// Appends the bytes `id` contributes to decoded text (llama.cpp's token-to-piece rules).
    func appendPiece(_ id: Int32, renderSpecial: Bool, to bytes: inout [UInt8]) {
        guard let type = vocabulary.type(id) else { return }
        switch type {
        case .normal, .undefined, .userDefined:
            bytes.append(contentsOf: vocabulary.tokenBytes[Int(id)])
        case .control, .unknown:
            if renderSpecial { bytes.append(contentsOf: vocabulary.tokenBytes[Int(id)]) }
        case .unused, .byte:
            break
        }
    }

    // MARK: - Encoding

    struct EncodingScratch {
        var scalars: [UInt32] = []
        var scalarOffsets: [Int] = []
        var words: [Range<Int>] = []
        var workspace = BPEWorkspace()
    }

    private enum Segment {
        case raw(Range<Int>)
        case token(Int32)
    }

    private func encodeBytes(
        _ bytes: UnsafeBufferPointer<UInt8>, parseSpecial: Bool, scratch: inout EncodingScratch,
        into output: inout [Int32]
    ) {
        if bytes.isEmpty { return }
        var segments: [Segment] = [.raw(0..<bytes.count)]
        for special in vocabulary.specialTokens where parseSpecial || special.alwaysMatched {
            segments = partition(segments, bytes: bytes, by: special.bytes, id: special.id)
        }
        for segment in segments {
            switch segment {
            case .token(let id):
                output.append(id)
            case .raw(let range):
                encodeRaw(UnsafeBufferPointer(rebasing: bytes[range]), scratch: &scratch, into: &output)
            }
        }
    }

    /// Cuts every occurrence of `needle` (left to right, not overlapping) out of the raw segments.
    private func partition(
        _ segments: [Segment], bytes: UnsafeBufferPointer<UInt8>, by needle: [UInt8], id: Int32
    ) -> [Segment] {
        var result: [Segment] = []
        result.reserveCapacity(segments.count)
        let first = needle[0]
        let length = needle.count
        for segment in segments {
            guard case .raw(let range) = segment, range.count >= length else {
                result.append(segment)
                continue
            }
            var start = range.lowerBound
            var index = range.lowerBound
            while index + length <= range.upperBound {
                if bytes[index] == first && matches(bytes, at: index, needle) {
                    if index > start { result.append(.raw(start..<index)) }
                    result.append(.token(id))
                    index += length
                    start = index
                } else {
                    index += 1
                }
            }
            if start < range.upperBound { result.append(.raw(start..<range.upperBound)) }
        }
        return result
    }

    @inline(__always) private func matches(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int, _ needle: [UInt8])
        -> Bool
    {
        for offset in 1..<needle.count where bytes[index + offset] != needle[offset] {
            return false
        }
        return true
    }

    /// Pre-tokenizes and merges a stretch of text that holds no special tokens.
    private func encodeRaw(
        _ bytes: UnsafeBufferPointer<UInt8>, scratch: inout EncodingScratch, into output: inout [Int32]
    ) {
        // Decode the (valid) UTF-8 into scalars, remembering where each one starts.
        scratch.scalars.removeAll(keepingCapacity: true)
        scratch.scalarOffsets.removeAll(keepingCapacity: true)
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            var value = UInt32(lead)
            var length = 1
            if lead >= 0xF0 {
                value &= 0x07
                length = 4
            } else if lead >= 0xE0 {
                value &= 0x0F
                length = 3
            } else if lead >= 0xC0 {
                value &= 0x1F
                length = 2
            }
            length = min(length, bytes.count - index)
            for offset in 1..<max(length, 1) {
                value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
            }
            scratch.scalars.append(value)
            scratch.scalarOffsets.append(index)
            index += length
        }
        scratch.scalarOffsets.append(bytes.count)
        scratch.words.removeAll(keepingCapacity: true)
        scratch.scalars.withUnsafeBufferPointer { scalars in
            preTokenizer.split(scalars, into: &scratch.words)
        }
        for word in scratch.words {
            let byteRange = scratch.scalarOffsets[word.lowerBound]..<scratch.scalarOffsets[word.upperBound]
            scratch.workspace.encode(
                UnsafeBufferPointer(rebasing: bytes[byteRange]), vocabulary: vocabulary, into: &output)
        }
    }
}
