/// Byte-level BPE (GPT-2 family, `tokenizer.ggml.model = gpt2`) as llama.cpp runs it: the
/// pre-tokenizer splits a stretch into words and each word's bytes merge by rank into tokens.
struct BPEModel: TokenizerModel {
    let table: TokenTable
    let vocabulary: BPEVocabulary
    let preTokenizer: PreTokenizer

    var addsSpacePrefix: Bool { false }
    var addsBOSByDefault: Bool { preTokenizer.addsBOSByDefault }

    init(tokens: [String], merges: [String], tokenTypes: [Int32], preTokenizer: PreTokenizer) throws {
        table = try TokenTable(tokens: tokens, tokenTypes: tokenTypes) { text, type, pieces in
            pieces.append(type == .byte ? [] : ByteLevelMapping.bytes(fromVocabularyText: text))
        }
        vocabulary = try BPEVocabulary(table: table, merges: merges)
        self.preTokenizer = preTokenizer
    }

    func encode(
        _ bytes: UnsafeBufferPointer<UInt8>, followsSpecial: Bool, scratch: inout EncodingScratch,
        into output: inout [Int32]
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
        let ignoresMerges = preTokenizer.ignoresMerges
        for word in scratch.words {
            let byteRange = scratch.scalarOffsets[word.lowerBound]..<scratch.scalarOffsets[word.upperBound]
            let wordBytes = UnsafeBufferPointer(rebasing: bytes[byteRange])
            // llama.cpp's ignore_merges: a word that is a token as a whole is that token.
            if ignoresMerges, let id = wholeWordToken(wordBytes, buffer: &scratch.bytes) {
                output.append(id)
                continue
            }
            scratch.bpe.encode(wordBytes, vocabulary: vocabulary, into: &output)
        }
    }

    /// The token spelled like the whole word (in byte-level form), if any.
    private func wholeWordToken(_ word: UnsafeBufferPointer<UInt8>, buffer: inout [UInt8]) -> Int32? {
        buffer.removeAll(keepingCapacity: true)
        for byte in word {
            buffer.append(contentsOf: ByteLevelMapping.utf8ForByte[Int(byte)])
        }
        return table.lookup.id(buffer)
    }
}
