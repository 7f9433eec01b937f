extension PreTokenizer {
    /// Mistral's Tekken pattern (`tekken`, Mistral Nemo, Ministral 3, Mistral Small 3), as
    /// llama.cpp runs it. Its tokenizer.json pattern separates case:
    /// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
    /// llama.cpp rewrites the two letter classes as "a letter but not a–z" (U) and "a letter but
    /// not A–Z" (L) and runs the pattern with its general regex over text whose non-ASCII code
    /// points are collapsed to one byte per class. So every non-ASCII letter is both U and L,
    /// marks are not letters, and the first alternative backtracks: the longest run of U whose
    /// next character can start an L run wins. This follows that, not the Hugging Face pattern
    /// (they differ on non-ASCII words with capitals inside, such as "ÉCOLE").
    static func splitTekken(
        _ scalars: UnsafeBufferPointer<UInt32>, _ start: Int, _ end: Int, into words: inout [Range<Int>]
    ) {
        @inline(__always) func scalarClass(_ index: Int) -> ScalarClass {
            index < end ? ScalarClass.of(scalars[index]) : .none
        }
        // U: a letter that is not a–z; L: a letter that is not A–Z.
        @inline(__always) func isUpper(_ index: Int) -> Bool {
            scalarClass(index) == .letter && !(0x61...0x7A).contains(scalars[index])
        }
        @inline(__always) func isLower(_ index: Int) -> Bool {
            scalarClass(index) == .letter && !(0x41...0x5A).contains(scalars[index])
        }
        func lowerRunEnd(_ index: Int) -> Int {
            var cursor = index
            while isLower(cursor) { cursor += 1 }
            return cursor
        }
        // U*L+ at `index`: U* from its longest down, the first that an L follows; nil if none.
        func upperThenLower(_ index: Int) -> Int? {
            var upperEnd = index
            while isUpper(upperEnd) { upperEnd += 1 }
            var split = upperEnd
            while true {
                if isLower(split) { return lowerRunEnd(split) }
                if split == index { return nil }
                split -= 1
            }
        }
        // U+L* at `index`; nil without a U.
        func upperRun(_ index: Int) -> Int? {
            var upperEnd = index
            while isUpper(upperEnd) { upperEnd += 1 }
            return upperEnd > index ? lowerRunEnd(upperEnd) : nil
        }
        let carriageReturn: UInt32 = 0x0D
        let lineFeed: UInt32 = 0x0A
        var position = start
        while position < end {
            let scalar = scalars[position]
            let currentClass = scalarClass(position)
            // [^\r\n\p{L}\p{N}]? before either letter alternative: tried with it first.
            let takesPrefix =
                scalar != carriageReturn && scalar != lineFeed && currentClass != .letter && currentClass != .number
            if let wordEnd = (takesPrefix ? upperThenLower(position + 1) : nil) ?? upperThenLower(position)
                ?? (takesPrefix ? upperRun(position + 1) : nil) ?? upperRun(position)
            {
                words.append(position..<wordEnd)
                position = wordEnd
                continue
            }
            // \p{N}: one number at a time
            if currentClass == .number {
                words.append(position..<(position + 1))
                position += 1
                continue
            }
            // ' '?[^\s\p{L}\p{N}]+[\r\n/]*
            let runClass = scalar == 0x20 ? scalarClass(position + 1) : currentClass
            if runClass == .other {
                var cursor = scalar == 0x20 ? position + 1 : position
                while scalarClass(cursor) == .other { cursor += 1 }
                while cursor < end
                    && (scalars[cursor] == carriageReturn || scalars[cursor] == lineFeed || scalars[cursor] == 0x2F)
                {
                    cursor += 1
                }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // \s*[\r\n]+ (up to the last line break of the whitespace run), \s+(?!\S), \s+
            var whitespaceCount = 0
            var lastLineBreakEnd = 0
            while scalarClass(position + whitespaceCount) == .whitespace {
                let value = scalars[position + whitespaceCount]
                if value == carriageReturn || value == lineFeed {
                    lastLineBreakEnd = position + whitespaceCount + 1
                }
                whitespaceCount += 1
            }
            if lastLineBreakEnd > 0 {
                words.append(position..<lastLineBreakEnd)
                position = lastLineBreakEnd
                continue
            }
            position = Self.appendWhitespaceRun(at: position, count: whitespaceCount, end: end, into: &words)
        }
    }
}
