import GenerationVocabulary

/// The contents (between the quotes) of strings in the supported `format`s. All are plain
/// ASCII, so no JSON escape is ever needed inside them.
enum StringFormats {
    static let names = ["date-time", "date", "time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname", "byte"]

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
        case "byte": base64
        default: nil
        }
    }

    static let digit = GrammarExpression.byteSet([0x30...0x39])
    static func digits(_ n: Int) -> GrammarExpression { .repetition(digit, minimum: n, maximum: n) }
    static let hex = GrammarExpression.byteSet([0x30...0x39, 0x41...0x46, 0x61...0x66])
    static func hexes(_ n: Int) -> GrammarExpression { .repetition(hex, minimum: n, maximum: n) }
    static let alnum = GrammarExpression.byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A])

    /// RFC 3339 full-date: years 0001–9999, months 01–12, and the days the month has (29
    /// February only in leap years), so every date is a real one.
    static var date: GrammarExpression {
        let even = GrammarExpression.chars("02468")
        let odd = GrammarExpression.chars("13579")
        // Two digits that are a multiple of 4, "00" left out, and the other two-digit strings
        // but "00": a year is leap when its last two digits are a multiple of 4, or are 00
        // and the first two are.
        let multipleOf4 = GrammarExpression.choice([
            .sequence([.text("0"), .chars("48")]), .sequence([.chars("2468"), .chars("048")]),
            .sequence([odd, .chars("26")]),
        ])
        let notMultipleOf4 = GrammarExpression.choice([
            .sequence([even, .chars("1235679")]), .sequence([odd, .chars("01345789")]),
        ])
        let leap = GrammarExpression.choice([
            .sequence([digits(2), multipleOf4]), .sequence([multipleOf4, .text("00")]),
        ])
        let common = GrammarExpression.choice([
            .sequence([digits(2), notMultipleOf4]), .sequence([notMultipleOf4, .text("00")]),
        ])
        func monthAndDay(february: Int) -> GrammarExpression {
            .choice([
                .sequence([
                    .choice(["01", "03", "05", "07", "08", "10", "12"].map { .text($0) }), .text("-"),
                    IntegerRanges.twoDigits(1, 31),
                ]),
                .sequence([
                    .choice(["04", "06", "09", "11"].map { .text($0) }), .text("-"), IntegerRanges.twoDigits(1, 30),
                ]),
                .sequence([.text("02-"), IntegerRanges.twoDigits(1, february)]),
            ])
        }
        return .choice([
            .sequence([leap, .text("-"), monthAndDay(february: 29)]),
            .sequence([common, .text("-"), monthAndDay(february: 28)]),
        ])
    }

    /// RFC 3339 full-time: hh:mm:ss, an optional fraction of a second (at most
    /// `StructuredBounds.maxSecondFractionDigits` digits), and `Z` or an offset.
    static var time: GrammarExpression {
        let clock = GrammarExpression.sequence([
            IntegerRanges.twoDigits(0, 23), .text(":"), IntegerRanges.twoDigits(0, 59), .text(":"),
            IntegerRanges.twoDigits(0, 59),
            .optional(
                .sequence([
                    .text("."), .repetition(digit, minimum: 1, maximum: StructuredBounds.maxSecondFractionDigits),
                ])),
        ])
        let offset = GrammarExpression.choice([
            .chars("Zz"),
            .sequence([.chars("+-"), IntegerRanges.twoDigits(0, 23), .text(":"), IntegerRanges.twoDigits(0, 59)]),
        ])
        return .sequence([clock, offset])
    }

    /// local-part `@` a hostname of at least two labels; the local part is 1–64 characters (RFC 5321).
    static var email: GrammarExpression {
        let local = GrammarExpression.repetition(
            .byteSet([
                0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E...0x2E, 0x5F...0x5F, 0x25...0x25, 0x2B...0x2B, 0x2D...0x2D,
            ]), minimum: 1, maximum: StructuredBounds.maxEmailLocalLength)
        return .sequence([local, .text("@"), hostnameWithDot])
    }

    /// OpenAPI's `byte`: base64 (RFC 4648 §4), groups of 4 characters of `A–Z a–z 0–9 + /`,
    /// the last one possibly padded (`xx==`, `xxx=`) with the bits the padding drops at zero
    /// (the canonical encoding every encoder writes, which strict decoders require). Any length
    /// (a multiple of 4); `minLength`/`maxLength` bound the number of groups.
    static var base64: GrammarExpression {
        let b64 = GrammarExpression.byteSet([0x2B...0x2B, 0x2F...0x39, 0x41...0x5A, 0x61...0x7A])
        // The last character before `==` holds 2 bits (the low 4 zero); before `=`, 4 (the low 2).
        let twoBits = GrammarExpression.chars("AQgw")
        let fourBits = GrammarExpression.chars("AEIMQUYcgkosw048")
        return .sequence([
            .zeroOrMore(.repetition(b64, minimum: 4, maximum: 4)),
            .optional(
                .choice([
                    .sequence([b64, twoBits, .text("==")]),
                    .sequence([.repetition(b64, minimum: 2, maximum: 2), fourBits, .text("=")]),
                ])),
        ])
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

    /// An RFC 3986 URI: scheme `:` then `//` authority and a path, or a path, then an optional
    /// query and fragment; every part counted (`StructuredBounds.maxURI…`), IP literals in
    /// brackets not generated. Written after the RFC's ABNF so that every value is a URI by it.
    static var uri: GrammarExpression {
        let scheme = GrammarExpression.sequence([
            .byteSet([0x41...0x5A, 0x61...0x7A]),
            .repetition(
                .byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2B...0x2B, 0x2D...0x2E]), minimum: 0,
                maximum: StructuredBounds.maxURISchemeLength - 1),
        ])
        let unreserved = "-._~"
        let subDelims = "!$&'()*+,;="
        func chars(_ extra: String) -> GrammarExpression {
            .choice([alnum, .chars(extra), .sequence([.text("%"), hex, hex])])
        }
        let pchar = chars(unreserved + subDelims + ":@")
        let segmentLength = StructuredBounds.maxURISegmentLength
        let segment = GrammarExpression.repetition(pchar, minimum: 0, maximum: segmentLength)
        let segmentNonEmpty = GrammarExpression.repetition(pchar, minimum: 1, maximum: segmentLength)
        let segments = StructuredBounds.maxURISegments
        let moreSegments = GrammarExpression.repetition(
            .sequence([.text("/"), segment]), minimum: 0, maximum: segments - 1)
        let authority = GrammarExpression.sequence([
            .optional(
                .sequence([
                    .repetition(
                        chars(unreserved + subDelims + ":"), minimum: 0,
                        maximum: StructuredBounds.maxURIUserinfoLength),
                    .text("@"),
                ])),
            .repetition(chars(unreserved + subDelims), minimum: 1, maximum: StructuredBounds.maxHostnameLength),
            .optional(.sequence([.text(":"), .repetition(digit, minimum: 1, maximum: 5)])),
        ])
        let hierarchy = GrammarExpression.choice([
            .sequence([
                .text("//"), authority,
                .repetition(.sequence([.text("/"), segment]), minimum: 0, maximum: segments),
            ]),
            .sequence([.text("/"), .optional(.sequence([segmentNonEmpty, moreSegments]))]),
            .sequence([segmentNonEmpty, moreSegments]),
            .empty,
        ])
        let tail = GrammarExpression.repetition(
            chars(unreserved + subDelims + ":@/?"), minimum: 0, maximum: StructuredBounds.maxURIQueryLength)
        return .sequence([
            scheme, .text(":"), hierarchy, .optional(.sequence([.text("?"), tail])),
            .optional(.sequence([.text("#"), tail])),
        ])
    }

    /// An RFC 1123 label of 1 to `length` characters: letters, digits and inner hyphens.
    static func label(_ length: Int) -> GrammarExpression {
        .sequence([
            alnum,
            .optional(
                .sequence([
                    .repetition(
                        .byteSet([0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D...0x2D]), minimum: 0,
                        maximum: length - 2),
                    alnum,
                ])),
        ])
    }

    /// Labels separated by dots, at least `minimumLabels`, never longer than
    /// `StructuredBounds.maxHostnameLength`: a grammar cannot count the characters of labels of
    /// any length, so it admits either up to 4 labels of up to 63 characters (the fourth up to 61,
    /// 253 in all) or up to 8 labels of up to 30 (247), which covers the names people use.
    static func hostname(minimumLabels: Int) -> GrammarExpression {
        let long = StructuredBounds.maxLabelLength
        let longest = StructuredBounds.maxHostnameLength - 3 * (long + 1)
        var fewLong: GrammarExpression = .empty
        for (i, length) in [long, long, long, longest].enumerated().reversed() {
            let rest = GrammarExpression.sequence([i == 0 ? .empty : .text("."), label(length), fewLong])
            fewLong = i == 0 || i < minimumLabels ? rest : .optional(rest)
        }
        let short = label(StructuredBounds.maxShortLabelLength)
        let manyShort = GrammarExpression.sequence([
            short,
            .repetition(
                .sequence([.text("."), short]), minimum: minimumLabels - 1,
                maximum: StructuredBounds.maxShortLabels - 1),
        ])
        return .choice([fewLong, manyShort])
    }

    static var hostname: GrammarExpression { hostname(minimumLabels: 1) }

    static var hostnameWithDot: GrammarExpression { hostname(minimumLabels: 2) }
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
