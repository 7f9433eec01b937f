/// A string that remembers, for each stretch of its text, whether it came from the template
/// itself (its literals, or `bos_token`/`eos_token`) or from data (messages, tools).
/// Concatenation, slicing, filters and methods keep that provenance, so rendering can emit
/// template text (where control-token spellings count) apart from data (where they never do).
///
/// Offsets are in Unicode scalars, as Python's string indices are.
struct JinjaString: Equatable {
    enum Origin: Equatable {
        case template
        case data
    }

    struct Segment: Equatable {
        var text: String
        var origin: Origin
    }

    private(set) var segments: [Segment] = []
    /// Total length in UTF-8 bytes (for the size bounds).
    private(set) var utf8Count = 0

    init() {}

    init(_ text: String, origin: Origin) {
        append(text, origin: origin)
    }

    var text: String {
        segments.count == 1 ? segments[0].text : segments.map(\.text).joined()
    }

    var isEmpty: Bool { utf8Count == 0 }
    var containsData: Bool { segments.contains { $0.origin == .data } }

    static func == (a: JinjaString, b: JinjaString) -> Bool { a.text == b.text }

    mutating func append(_ text: String, origin: Origin) {
        guard !text.isEmpty else { return }
        utf8Count += text.utf8.count
        if let last = segments.last, last.origin == origin {
            segments[segments.count - 1].text += text
        } else {
            segments.append(Segment(text: text, origin: origin))
        }
    }

    mutating func append(_ other: JinjaString) {
        for segment in other.segments { append(segment.text, origin: segment.origin) }
    }

    static func + (a: JinjaString, b: JinjaString) -> JinjaString {
        var result = a
        result.append(b)
        return result
    }

    /// The same text with every segment's origin set to `origin`.
    func with(origin: Origin) -> JinjaString { JinjaString(text, origin: origin) }

    /// Applies `transform` to each segment's text, keeping its origin (for changes that map
    /// characters one to one, like case changes).
    func mapSegments(_ transform: (String) -> String) -> JinjaString {
        var result = JinjaString()
        for segment in segments { result.append(transform(segment.text), origin: segment.origin) }
        return result
    }

    /// Scalars paired with their origins, for operations that cut across segments.
    var scalarsWithOrigins: [(scalar: Unicode.Scalar, origin: Origin)] {
        var result: [(scalar: Unicode.Scalar, origin: Origin)] = []
        for segment in segments {
            for scalar in segment.text.unicodeScalars { result.append((scalar, segment.origin)) }
        }
        return result
    }

    static func from(_ pairs: ArraySlice<(scalar: Unicode.Scalar, origin: Origin)>) -> JinjaString {
        var result = JinjaString()
        var view = String.UnicodeScalarView()
        var origin = Origin.template
        for pair in pairs {
            if pair.origin != origin && !view.isEmpty {
                result.append(String(view), origin: origin)
                view = String.UnicodeScalarView()
            }
            origin = pair.origin
            view.append(pair.scalar)
        }
        result.append(String(view), origin: origin)
        return result
    }

    /// Removes leading and/or trailing scalars in `set` (whitespace when nil), like Python's
    /// `strip`, `lstrip` and `rstrip`.
    func stripped(leading: Bool, trailing: Bool, characters set: Set<Unicode.Scalar>? = nil) -> JinjaString {
        let pairs = scalarsWithOrigins
        func strip(_ scalar: Unicode.Scalar) -> Bool {
            if let set { return set.contains(scalar) }
            return scalar.properties.isWhitespace
        }
        var start = 0
        var end = pairs.count
        if leading { while start < end, strip(pairs[start].scalar) { start += 1 } }
        if trailing { while end > start, strip(pairs[end - 1].scalar) { end -= 1 } }
        return Self.from(pairs[start..<end])
    }

    /// Scalar offsets where `needle` occurs, left to right without overlap.
    static func occurrences(of needle: [Unicode.Scalar], in scalars: [Unicode.Scalar]) -> [Int] {
        guard !needle.isEmpty, needle.count <= scalars.count else { return [] }
        var result: [Int] = []
        var index = 0
        while index + needle.count <= scalars.count {
            if scalars[index] == needle[0] && Array(scalars[index..<(index + needle.count)]) == needle {
                result.append(index)
                index += needle.count
            } else {
                index += 1
            }
        }
        return result
    }

    /// Python's `split(separator)` (or on runs of whitespace when nil), each part keeping its origins.
    func split(_ separator: String?, maxSplits: Int = -1) -> [JinjaString] {
        let pairs = scalarsWithOrigins
        let scalars = pairs.map(\.scalar)
        var parts: [JinjaString] = []
        guard let separator else {
            var index = 0
            while index < pairs.count {
                while index < pairs.count, scalars[index].properties.isWhitespace { index += 1 }
                guard index < pairs.count else { break }
                var end = index
                if maxSplits >= 0 && parts.count == maxSplits {
                    end = pairs.count
                    while end > index, scalars[end - 1].properties.isWhitespace { end -= 1 }
                } else {
                    while end < pairs.count, !scalars[end].properties.isWhitespace { end += 1 }
                }
                parts.append(Self.from(pairs[index..<end]))
                index = end
            }
            return parts
        }
        let needle = Array(separator.unicodeScalars)
        var start = 0
        for offset in Self.occurrences(of: needle, in: scalars) {
            if maxSplits >= 0 && parts.count == maxSplits { break }
            parts.append(Self.from(pairs[start..<offset]))
            start = offset + needle.count
        }
        parts.append(Self.from(pairs[start..<pairs.count]))
        return parts
    }

    /// Replaces occurrences of `old` with `new`. A replaced stretch that held any data stays
    /// data, so a template cannot turn message text into control tokens by replacing it.
    func replacing(_ old: String, with new: JinjaString, count limit: Int = -1) -> JinjaString {
        let pairs = scalarsWithOrigins
        let needle = Array(old.unicodeScalars)
        guard !needle.isEmpty else { return self }
        var result = JinjaString()
        var start = 0
        var done = 0
        for offset in Self.occurrences(of: needle, in: pairs.map(\.scalar)) {
            if limit >= 0 && done == limit { break }
            result.append(Self.from(pairs[start..<offset]))
            let matchedData = pairs[offset..<(offset + needle.count)].contains { $0.origin == .data }
            result.append(matchedData ? new.with(origin: .data) : new)
            start = offset + needle.count
            done += 1
        }
        result.append(Self.from(pairs[start..<pairs.count]))
        return result
    }
}
