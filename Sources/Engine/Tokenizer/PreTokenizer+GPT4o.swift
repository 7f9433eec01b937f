extension PreTokenizer {
    /// GPT-4o's pattern (`gpt-4o`, gpt-oss's and Llama 4's), in the form llama.cpp runs it:
    /// `[^\r\n\p{L}\p{N}]?U*L+C?|[^\r\n\p{L}\p{N}]?U+L*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    /// where U is a letter other than a–z (`(?=[\p{L}])([^a-z])`), L a letter other than A–Z
    /// (so a letter beyond ASCII is both) and C a contraction `'s 't 're 've 'm 'll 'd` in either
    /// case. Alternatives are tried in order and each is greedy with backtracking, as
    /// `std::regex` matches them: `U*L+` takes the longest run of U and backs off to the last
    /// position where an L follows ("ÉCOLE" is "É" then "COLE").
    static func splitGPT4o(_ scalars: UnsafeBufferPointer<UInt32>, into words: inout [Range<Int>]) {
        let end = scalars.count
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
        @inline(__always) func isLineBreak(_ index: Int) -> Bool {
            index < end && (scalars[index] == 0x0D || scalars[index] == 0x0A)
        }
        /// The end of an optional contraction at `index`, or `index`.
        func contraction(_ index: Int) -> Int {
            guard index + 1 < end, scalars[index] == 0x27 else { return index }
            let lower = { (i: Int) -> UInt32 in
                let v = scalars[i]
                return (0x41...0x5A).contains(v) ? v + 0x20 : v
            }
            let next = lower(index + 1)
            if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 { return index + 2 }
            if index + 2 < end {
                let after = lower(index + 2)
                if (next == 0x72 && after == 0x65) || (next == 0x76 && after == 0x65) || (next == 0x6C && after == 0x6C)
                {
                    return index + 3
                }
            }
            return index
        }
        var position = 0
        while position < end {
            let currentClass = scalarClass(position)
            // The optional leading [^\r\n\p{L}\p{N}] of the two letter alternatives: a word may
            // only start there when letters follow, so with a letter here there is none.
            let start =
                currentClass != .letter && currentClass != .number && !isLineBreak(position) ? position + 1 : position
            var upperEnd = start
            while isUpper(upperEnd) { upperEnd += 1 }
            // U*L+: the last position up to upperEnd where an L starts.
            var lowerStart = -1
            if isLower(upperEnd) {
                lowerStart = upperEnd
            } else {
                var i = upperEnd - 1
                while i >= start {
                    if isLower(i) {
                        lowerStart = i
                        break
                    }
                    i -= 1
                }
            }
            if lowerStart >= 0 {
                var cursor = lowerStart + 1
                while isLower(cursor) { cursor += 1 }
                cursor = contraction(cursor)
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // U+L*
            if upperEnd > start {
                var cursor = upperEnd
                while isLower(cursor) { cursor += 1 }
                cursor = contraction(cursor)
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // \p{N}{1,3}
            if currentClass == .number {
                var cursor = position + 1
                while cursor - position < 3 && scalarClass(cursor) == .number { cursor += 1 }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // ' '?[^\s\p{L}\p{N}]+[\r\n/]*
            let runStart = scalars[position] == 0x20 ? position + 1 : position
            if scalarClass(runStart) == .other {
                var cursor = runStart
                while scalarClass(cursor) == .other { cursor += 1 }
                while isLineBreak(cursor) || (cursor < end && scalars[cursor] == 0x2F) { cursor += 1 }
                words.append(position..<cursor)
                position = cursor
                continue
            }
            // \s*[\r\n]+ (up to the last line break of the whitespace run), \s+(?!\S), \s+
            var whitespaceCount = 0
            var lastLineBreakEnd = 0
            while scalarClass(position + whitespaceCount) == .whitespace {
                if isLineBreak(position + whitespaceCount) { lastLineBreakEnd = position + whitespaceCount + 1 }
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
