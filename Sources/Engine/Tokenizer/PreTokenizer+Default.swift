extension PreTokenizer {
    /// llama.cpp's `default` BPE pre-tokenizer: four patterns applied one after another, each
    /// splitting every fragment the previous one left into its matches and the gaps between them:
    /// `[\p{P}\$\+<=>\^~\|]+`, the GPT-2 pattern, `\p{N}+`, then `[0-9][0-9][0-9]`.
    static func splitDefault(_ scalars: UnsafeBufferPointer<UInt32>, into words: inout [Range<Int>]) {
        var fragments: [Range<Int>] = []
        cutRuns(0..<scalars.count, into: &fragments) { isDefaultPunctuation(scalars[$0]) }
        var gpt2Words: [Range<Int>] = []
        for fragment in fragments {
            splitGPT2(scalars, fragment.lowerBound, fragment.upperBound, into: &gpt2Words)
        }
        var numberWords: [Range<Int>] = []
        for word in gpt2Words {
            cutRuns(word, into: &numberWords) { ScalarClass.of(scalars[$0]) == .number }
        }
        for word in numberWords {
            cutDigitTriples(scalars, word, into: &words)
        }
    }

    /// `[\p{P}\$\+<=>\^~\|]`: Unicode punctuation (P*), or one of the listed ASCII symbols.
    /// Among ASCII this is every punctuation and symbol character except the backtick.
    static func isDefaultPunctuation(_ value: UInt32) -> Bool {
        if value < 128 {
            let byte = UInt8(value)
            return (0x21...0x2F).contains(byte) || (0x3A...0x40).contains(byte) || (0x5B...0x5F).contains(byte)
                || (0x7B...0x7E).contains(byte)
        }
        guard let scalar = Unicode.Scalar(value) else { return false }
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
            .finalPunctuation, .otherPunctuation:
            return true
        default:
            return false
        }
    }

    /// Splits `range` into maximal runs of positions matching `isMember` and the gaps between.
    private static func cutRuns(_ range: Range<Int>, into pieces: inout [Range<Int>], isMember: (Int) -> Bool) {
        var start = range.lowerBound
        var index = range.lowerBound
        while index < range.upperBound {
            guard isMember(index) else {
                index += 1
                continue
            }
            var end = index + 1
            while end < range.upperBound && isMember(end) { end += 1 }
            if index > start { pieces.append(start..<index) }
            pieces.append(index..<end)
            start = end
            index = end
        }
        if start < range.upperBound { pieces.append(start..<range.upperBound) }
    }

    /// `[0-9][0-9][0-9]` left to right, without overlaps, and the gaps between.
    private static func cutDigitTriples(
        _ scalars: UnsafeBufferPointer<UInt32>, _ range: Range<Int>, into pieces: inout [Range<Int>]
    ) {
        @inline(__always) func isDigit(_ index: Int) -> Bool { (0x30...0x39).contains(scalars[index]) }
        var start = range.lowerBound
        var index = range.lowerBound
        while index + 3 <= range.upperBound {
            if isDigit(index) && isDigit(index + 1) && isDigit(index + 2) {
                if index > start { pieces.append(start..<index) }
                pieces.append(index..<(index + 3))
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if start < range.upperBound { pieces.append(start..<range.upperBound) }
    }
}
