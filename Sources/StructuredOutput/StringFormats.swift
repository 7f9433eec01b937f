import Engine

/// The contents (between the quotes) of strings in the supported `format`s. All are plain
/// ASCII, so no JSON escape is ever needed inside them.
enum StringFormats {
    static let names = ["date-time", "date", "time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname"]

    static func grammar(_ name: String) -> GrammarExpression? {
        switch name {
        case "date": date
        case "time": time
        case "date-time": .sequence([date, .chars("T"), time])
        case "email": email
        case "uuid": uuid
        case "ipv4": ipv4
        case "ipv6": ipv6
        case "uri": uri
        case "hostname": hostname
        default: nil
        }
    }

    static let digit = GrammarExpression.byteSet([0x30...0x39])
    static func digits(_ n: Int) -> GrammarExpression { .repetition(digit, minimum: n, maximum: n) }
    static let hex = GrammarExpression.byteSet([0x30...0x39, 0x41...0x46, 0x61...0x66])
    static func hexes(_ n: Int) -> GrammarExpression { .repetition(hex, minimum: n, maximum: n) }
    static let alnum = GrammarExpression.byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A])

    /// RFC 3339 full-date: a four-digit year, month 01–12, day 01–31 (not checked against the month).
    static var date: GrammarExpression {
        .sequence([
            digits(4), .text("-"), IntegerRanges.twoDigits(1, 12), .text("-"), IntegerRanges.twoDigits(1, 31),
        ])
    }

    /// RFC 3339 full-time: hh:mm:ss, optional fraction, and `Z` or an offset.
    static var time: GrammarExpression {
        let clock = GrammarExpression.sequence([
            IntegerRanges.twoDigits(0, 23), .text(":"), IntegerRanges.twoDigits(0, 59), .text(":"),
            IntegerRanges.twoDigits(0, 59), .optional(.sequence([.text("."), .oneOrMore(digit)])),
        ])
        let offset = GrammarExpression.choice([
            .chars("Zz"),
            .sequence([.chars("+-"), IntegerRanges.twoDigits(0, 23), .text(":"), IntegerRanges.twoDigits(0, 59)]),
        ])
        return .sequence([clock, offset])
    }

    static var email: GrammarExpression {
        let local = GrammarExpression.oneOrMore(
            .byteSet([
                0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E...0x2E, 0x5F...0x5F, 0x25...0x25, 0x2B...0x2B, 0x2D...0x2D,
            ]))
        return .sequence([local, .text("@"), hostnameWithDot])
    }

    static var uuid: GrammarExpression {
        .sequence([hexes(8), .text("-"), hexes(4), .text("-"), hexes(4), .text("-"), hexes(4), .text("-"), hexes(12)])
    }

    static var octet: GrammarExpression { IntegerRanges.naturals(0, 255) }
    static var ipv4: GrammarExpression {
        .sequence([octet, .text("."), octet, .text("."), octet, .text("."), octet])
    }

    /// The RFC 4291 text forms with 1–4 hex digits per group and at most one `::` (the
    /// embedded-IPv4 tail is not generated).
    static var ipv6: GrammarExpression {
        let h16 = GrammarExpression.repetition(hex, minimum: 1, maximum: 4)
        func groups(_ n: Int) -> GrammarExpression {
            n == 0
                ? .empty : .sequence([h16, .repetition(.sequence([.text(":"), h16]), minimum: n - 1, maximum: n - 1)])
        }
        var options: [GrammarExpression] = [groups(8)]
        for before in 0...7 {
            for after in 0...(7 - before) {
                options.append(.sequence([groups(before), .text("::"), groups(after)]))
            }
        }
        return .choice(options)
    }

    /// scheme ":" then URI characters (RFC 3986's unreserved, reserved and `%`).
    static var uri: GrammarExpression {
        let scheme = GrammarExpression.sequence([
            .byteSet([0x41...0x5A, 0x61...0x7A]),
            .zeroOrMore(.byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2B...0x2B, 0x2D...0x2E])),
        ])
        let chars = GrammarExpression.chars("-._~:/?#[]@!$&'()*+,;=%")
        return .sequence([scheme, .text(":"), .oneOrMore(.choice([alnum, chars]))])
    }

    static var label: GrammarExpression {
        .sequence([
            alnum,
            .optional(
                .sequence([
                    .repetition(
                        .byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D...0x2D]), minimum: 0, maximum: 61),
                    alnum,
                ])),
        ])
    }

    static var hostname: GrammarExpression {
        .sequence([label, .zeroOrMore(.sequence([.text("."), label]))])
    }

    static var hostnameWithDot: GrammarExpression {
        .sequence([label, .oneOrMore(.sequence([.text("."), label]))])
    }
}

extension IntegerRanges {
    /// Two-digit numbers `lo...hi` with a leading zero (`01`…`12`).
    static func twoDigits(_ lo: Int, _ hi: Int) -> GrammarExpression {
        let a = Array(String(format2(lo)).utf8)
        let b = Array(String(format2(hi)).utf8)
        return sameLength(a, b)
    }

    private static func format2(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
