extension PreTokenizer {
    /// Llama 3's pattern (`llama-bpe`), and with `maxDigits` 1 Qwen 2's (`qwen2`):
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
    /// matched as llama.cpp's hand-written matcher does.
    static func splitLlama3(
        _ scalars: UnsafeBufferPointer<UInt32>, _ start: Int, _ end: Int, maxDigits: Int,
        into words: inout [Range<Int>]
    ) {
        @inline(__always) func scalarClass(_ index: Int) -> ScalarClass {
            index < end ? ScalarClass.of(scalars[index]) : .none
        }
        @inline(__always) func lowercaseASCII(_ index: Int) -> UInt32 {
            let value = scalars[index]
            return (0x41...0x5A).contains(value) ? value + 0x20 : value
        }
        let carriageReturn: UInt32 = 0x0D
        let lineFeed: UInt32 = 0x0A
        var position = start
        while position < end {
            let scalar = scalars[position]
            let currentClass = scalarClass(position)
            // (?i:'s|'t|'re|'ve|'m|'ll|'d)
            if scalar == 0x27 && position + 1 < end {
                let next = lowercaseASCII(position + 1)
                if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 {
                    words.append(position..<(position + 2))
                    position += 2
                    continue
                }
                if position + 2 < end {
                    let afterNext = lowercaseASCII(position + 2)
                    if (next == 0x72 && afterNext == 0x65) || (next == 0x76 && afterNext == 0x65)
                        || (next == 0x6C && afterNext == 0x6C)
                    {
                        words.append(position..<(position + 3))
                        position += 3
                        continue
                    }
                }
            }
            // [^\r\n\p{L}\p{N}]?\p{L}+
            if scalar != carriageReturn && scalar != lineFeed && currentClass != .number
                && (currentClass == .letter || scalarClass(position + 1) == .letter)
            {
                var cursor = position + 1
                while scalarClass(cursor) == .letter { cursor += 1 }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // \p{N}{1,maxDigits}
            if currentClass == .number {
                var cursor = position + 1
                while cursor - position < maxDigits && scalarClass(cursor) == .number { cursor += 1 }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // ' '?[^\s\p{L}\p{N}]+[\r\n]*
            let runClass = scalar == 0x20 ? scalarClass(position + 1) : currentClass
            if runClass != .whitespace && runClass != .letter && runClass != .number {
                var cursor = scalar == 0x20 ? position + 1 : position
                while scalarClass(cursor) == .other { cursor += 1 }
                while cursor < end && (scalars[cursor] == carriageReturn || scalars[cursor] == lineFeed) {
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
