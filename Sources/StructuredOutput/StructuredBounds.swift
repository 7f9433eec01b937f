/// The bounds inferd puts on what a JSON Schema (or JSON mode) leaves unbounded, compiled into
/// the grammar so the masks enforce them.
///
/// Why: a small model decoding greedily under a constraint tends to keep going wherever the
/// grammar lets it (one more digit, one more hostname label, one more invented key), and such an
/// answer only ends when `max_tokens` cuts it, with no validated value. Each bound is chosen so
/// that no value a user would want is excluded in practice, and every value within it still
/// validates against the original schema (the grammar's language only shrinks). The README's
/// table of bounds lists these constants; change them here only.
public enum StructuredBounds {
    /// Digits of an integer (and of a number's integer part) after the sign: beyond 16 an IEEE
    /// double, which most JSON readers parse numbers into, no longer holds every integer exactly.
    /// `minimum`/`maximum` are honoured exactly within this (their values are below 10^15).
    public static let maxIntegerDigits = 16
    /// Digits after a number's decimal point: a double carries about 16 significant digits.
    public static let maxFractionDigits = 16
    /// Digits of a number's exponent: a double's exponent is at most 308.
    public static let maxExponentDigits = 3
    /// Digits of the fraction of a second in `date-time` and `time` (RFC 3339 sets no limit):
    /// 9 is nanoseconds, the finest clock most systems have.
    public static let maxSecondFractionDigits = 9
    /// Characters of one hostname label (RFC 1123).
    public static let maxLabelLength = 63
    /// Characters of a whole hostname (RFC 1123): the grammar admits up to 4 labels of up to 63
    /// characters (the fourth up to 61), or up to `maxShortLabels` labels of up to
    /// `maxShortLabelLength`, so every name it admits is within this length.
    public static let maxHostnameLength = 253
    public static let maxShortLabels = 8
    public static let maxShortLabelLength = 30
    /// Characters of an email address's local part (RFC 5321).
    public static let maxEmailLocalLength = 64
    /// Parts of a `uri`: scheme, userinfo, each path segment, the number of segments, and the
    /// query or fragment (the host is at most `maxHostnameLength`, the port 5 digits).
    public static let maxURISchemeLength = 32
    public static let maxURIUserinfoLength = 64
    public static let maxURISegmentLength = 128
    public static let maxURISegments = 16
    public static let maxURIQueryLength = 512
    /// Extra members of an object whose `additionalProperties` is `true` or a schema (or that has
    /// neither `properties` nor `additionalProperties`): a model would otherwise invent keys forever.
    public static let maxExtraProperties = 16
    /// Characters of a key the schema does not name (an extra member's, a free object's): a
    /// model that may not repeat a key otherwise writes on inside a new one without end. 64
    /// holds the identifiers, labels and sentences-as-keys people use.
    public static let maxKeyLength = 64
    /// Recursive `$ref`s nested in one another (a tree's nodes, a thread's replies): at this
    /// depth a reference that would nest once more can only be left out (an optional member
    /// omitted, an array left empty, another `anyOf` branch taken). A small model otherwise
    /// nests without end. 8 holds the trees, threads and component hierarchies people ask for;
    /// a schema whose recursion can never end (every instance nests again) is refused.
    public static let maxRecursionDepth = 8
    /// More repetitions than a `pattern`'s `+`, `*` or `{m,}` requires: `+` is `{1,33}`, `*`
    /// `{0,32}`, `{m,}` `{m,m+32}`. 32 leaves room for the identifiers, names and paths such
    /// patterns usually describe (`[a-z0-9-]+`: a repository name), and stops a model that
    /// writes digits or path segments forever.
    public static let maxPatternRepetitions = 32
}
