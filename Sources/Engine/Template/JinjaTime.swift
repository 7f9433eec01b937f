import Foundation

/// A moment in UTC as `strftime_now` formats it: the caller's time (a request's), never a
/// clock the template reads. Hugging Face templates ask for dates (gpt-oss's "Current date:",
/// Llama 3.1's "Today Date:").
struct JinjaTime: Sendable, Equatable {
    let year: Int
    let month: Int
    let day: Int
    let hour: Int
    let minute: Int
    let second: Int
    /// 1 = Monday … 7 = Sunday.
    let weekday: Int
    let dayOfYear: Int

    init(_ date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        year = c.year ?? 1970
        month = c.month ?? 1
        day = c.day ?? 1
        hour = c.hour ?? 0
        minute = c.minute ?? 0
        second = c.second ?? 0
        weekday = ((c.weekday ?? 1) + 5) % 7 + 1
        dayOfYear = calendar.ordinality(of: .day, in: .year, for: date) ?? 1
    }

    private static let months = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]
    private static let weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    /// Python's `strftime` for the C locale's directives templates use (`%Y %y %m %d %e %j %H %I
    /// %M %S %p %B %b %h %A %a %%`, and glibc's `%-d`, `%-m`, … without padding); another
    /// directive is an error rather than a guess.
    func formatted(_ format: String) throws(JinjaError) -> String {
        var out = ""
        var characters = format.makeIterator()
        func padded(_ value: Int, _ width: Int, _ pad: Bool) -> String {
            let text = String(value)
            return pad && text.count < width ? String(repeating: "0", count: width - text.count) + text : text
        }
        while let character = characters.next() {
            guard character == "%" else {
                out.append(character)
                continue
            }
            guard var directive = characters.next() else { throw .evaluation("strftime format ends with '%'") }
            var pad = true
            if directive == "-" {
                pad = false
                guard let next = characters.next() else { throw .evaluation("strftime format ends with '%-'") }
                directive = next
            }
            switch directive {
            case "Y": out += String(year)
            case "y": out += padded(year % 100, 2, pad)
            case "m": out += padded(month, 2, pad)
            case "d": out += padded(day, 2, pad)
            case "e": out += pad && day < 10 ? " \(day)" : String(day)
            case "j": out += padded(dayOfYear, 3, pad)
            case "H": out += padded(hour, 2, pad)
            case "I": out += padded(hour % 12 == 0 ? 12 : hour % 12, 2, pad)
            case "M": out += padded(minute, 2, pad)
            case "S": out += padded(second, 2, pad)
            case "p": out += hour < 12 ? "AM" : "PM"
            case "B": out += Self.months[month - 1]
            case "b", "h": out += String(Self.months[month - 1].prefix(3))
            case "A": out += Self.weekdays[weekday - 1]
            case "a": out += String(Self.weekdays[weekday - 1].prefix(3))
            case "%": out += "%"
            default: throw .evaluation("strftime directive '%\(directive)' is not supported")
            }
        }
        return out
    }
}
