/// Finds caller stop strings in the growing answer and tells how much of it is safe to show:
/// text that could still turn out to be the start of a stop string is held back.
struct StopStringMatcher: Sendable {
    let stops: [String]

    init(stops: [String]) {
        self.stops = stops.filter { !$0.isEmpty }
    }

    enum Outcome: Equatable {
        /// No stop string; the first `visibleCount` characters may be shown.
        case visible(Int)
        /// A stop string begins at this character offset: the answer ends there.
        case stopped(at: Int)
    }

    func check(_ text: String) -> Outcome {
        guard !stops.isEmpty else { return .visible(text.count) }
        let chars = Array(text)
        var earliest: Int?
        for stop in stops {
            let s = Array(stop)
            guard s.count <= chars.count else { continue }
            var i = 0
            while i + s.count <= chars.count {
                if chars[i] == s[0] && Array(chars[i..<(i + s.count)]) == s {
                    earliest = min(earliest ?? i, i)
                    break
                }
                i += 1
            }
        }
        if let at = earliest { return .stopped(at: at) }
        // Hold back the longest suffix that is a proper prefix of some stop string.
        var held = 0
        for stop in stops {
            let s = Array(stop)
            var n = min(s.count - 1, chars.count)
            while n > held {
                if Array(chars[(chars.count - n)...]) == Array(s[0..<n]) {
                    held = n
                    break
                }
                n -= 1
            }
        }
        return .visible(chars.count - held)
    }
}
