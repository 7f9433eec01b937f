/// A parsed Jinja template, rendered with provenance-carrying output. Parsing and rendering are
/// bounded by `limits`; failures are `JinjaError`s.
///
/// Behaves like jinja2 as Hugging Face's `apply_chat_template` configures it: `trim_blocks` and
/// `lstrip_blocks` on, undefined values falsy and rendered empty, `loopcontrols` on.
public struct JinjaTemplate: @unchecked Sendable {
    // The nodes are immutable after parsing (macros are final classes with `let` fields), so
    // sharing them between threads is safe.
    let nodes: [JinjaNode]
    public let limits: JinjaLimits

    public init(_ source: String, limits: JinjaLimits = JinjaLimits()) throws(JinjaError) {
        self.limits = limits
        self.nodes = try JinjaParser.parse(source, limits: limits)
    }

    /// Renders with `context` as the template's variables; `now`, when given, is the time
    /// `strftime_now` formats (templates read no clock of their own).
    func render(_ context: [String: JinjaValue], now: JinjaTime? = nil) throws(JinjaError) -> JinjaString {
        try JinjaEvaluator(context: context, limits: limits, now: now).run(nodes)
    }
}
