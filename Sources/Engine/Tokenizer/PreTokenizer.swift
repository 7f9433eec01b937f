/// Splits text into the words that byte-level BPE merges within, following llama.cpp's
/// pre-tokenizer for each `tokenizer.ggml.pre` value that is implemented.
///
/// `gpt2` is the GPT-2 pattern
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
/// (a whitespace run followed by more text leaves its last character to start the next word).
/// `smollm` first cuts out every `\p{N}` code point as a word of its own, then applies the GPT-2
/// pattern to each remaining stretch separately. `llama3` and `qwen2` are Llama 3's and Qwen 2's
/// patterns (`PreTokenizer+Llama3.swift`); `gpt4o` is GPT-4o's (gpt-oss's,
/// `PreTokenizer+GPT4o.swift`); `tekken` is Mistral's (`PreTokenizer+Tekken.swift`); `default` is
/// llama.cpp's fallback cascade (`PreTokenizer+Default.swift`).
enum PreTokenizer: Sendable, Equatable {
    case gpt2
    case smollm
    case llama3
    case qwen2
    case gpt4o
    case tekken
    /// llama.cpp's `default`, also what it uses when `tokenizer.ggml.pre` is missing.
    case `default`

    /// The `tokenizer.ggml.pre` values accepted, for error messages.
    static let supportedNames = [
        "gpt-2", "gpt2", "smollm", "llama-bpe", "llama3", "llama-v3", "qwen2", "deepseek-r1-qwen", "gpt-4o", "llama4",
        "tekken", "default",
    ]

    init?(name: String) {
        switch name {
        case "gpt-2", "gpt2": self = .gpt2
        case "smollm": self = .smollm
        // The names llama.cpp maps to its LLAMA3 pre-tokenizer for Llama 3 models.
        case "llama-bpe", "llama3", "llama-v3": self = .llama3
        case "qwen2", "deepseek-r1-qwen": self = .qwen2
        // The names llama.cpp maps to its GPT4O pre-tokenizer.
        case "gpt-4o", "llama4": self = .gpt4o
        case "tekken": self = .tekken
        case "default": self = .default
        default: return nil
        }
    }

    /// llama.cpp's `add_bos` when `tokenizer.ggml.add_bos_token` is absent: set for Llama 3 and
    /// Tekken.
    var addsBOSByDefault: Bool { self == .llama3 || self == .tekken }

    /// llama.cpp's `ignore_merges` (Llama 3, Tekken): a word that is a token as a whole is not
    /// merged.
    var ignoresMerges: Bool { self == .llama3 || self == .tekken }

    /// Appends to `words` the ranges (indices into `scalars`) of the words of `scalars`.
    func split(_ scalars: UnsafeBufferPointer<UInt32>, into words: inout [Range<Int>]) {
        switch self {
        case .gpt2:
            Self.splitGPT2(scalars, 0, scalars.count, into: &words)
        case .smollm:
            var start = 0
            for index in 0..<scalars.count where ScalarClass.of(scalars[index]) == .number {
                Self.splitGPT2(scalars, start, index, into: &words)
                words.append(index..<(index + 1))
                start = index + 1
            }
            Self.splitGPT2(scalars, start, scalars.count, into: &words)
        case .llama3:
            Self.splitLlama3(scalars, 0, scalars.count, maxDigits: 3, into: &words)
        case .qwen2:
            Self.splitLlama3(scalars, 0, scalars.count, maxDigits: 1, into: &words)
        case .gpt4o:
            Self.splitGPT4o(scalars, into: &words)
        case .tekken:
            Self.splitTekken(scalars, 0, scalars.count, into: &words)
        case .default:
            Self.splitDefault(scalars, into: &words)
        }
    }

    static func splitGPT2(
        _ scalars: UnsafeBufferPointer<UInt32>, _ start: Int, _ end: Int, into words: inout [Range<Int>]
    ) {
        @inline(__always) func scalarClass(_ index: Int) -> ScalarClass {
            index < end ? ScalarClass.of(scalars[index]) : .none
        }
        @inline(__always) func isASCII(_ index: Int, _ character: Unicode.Scalar) -> Bool {
            index < end && scalars[index] == character.value
        }
        let space = UInt32(0x20)
        var position = start
        while position < end {
            let scalar = scalars[position]
            // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive, as in the GPT-2 pattern)
            if scalar == 0x27 && position + 1 < end {
                let next = scalars[position + 1]
                if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 {
                    words.append(position..<(position + 2))
                    position += 2
                    continue
                }
                if (next == 0x72 && isASCII(position + 2, "e")) || (next == 0x76 && isASCII(position + 2, "e"))
                    || (next == 0x6C && isASCII(position + 2, "l"))
                {
                    words.append(position..<(position + 3))
                    position += 3
                    continue
                }
            }
            // ' ?' takes one leading ASCII space into a letter, number or punctuation run.
            let leadingSpace = scalar == space ? 1 : 0
            let runClass = scalarClass(position + leadingSpace)
            if runClass == .letter || runClass == .number || runClass == .other {
                var cursor = position + leadingSpace + 1
                while scalarClass(cursor) == runClass { cursor += 1 }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            var whitespaceCount = 0
            while scalarClass(position + whitespaceCount) == .whitespace { whitespaceCount += 1 }
            position = Self.appendWhitespaceRun(at: position, count: whitespaceCount, end: end, into: &words)
        }
    }

    /// The tail every pattern here shares, at a run of `count` whitespace scalars: `\s+(?!\S)`
    /// (a run followed by more text leaves its last character to start the next word), else
    /// `\s+`; with no whitespace (not reached for valid scalars) the scalar stands alone.
    /// Returns the position after the word it appended.
    static func appendWhitespaceRun(at position: Int, count: Int, end: Int, into words: inout [Range<Int>]) -> Int {
        let length = count > 1 && position + count < end ? count - 1 : max(count, 1)
        words.append(position..<(position + length))
        return position + length
    }
}
