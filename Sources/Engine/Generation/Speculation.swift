import Telemetry

/// Speculative decoding as the engine runs it: a drafter's guesses are checked in one pass of
/// decode rows (`TokenPredictor.verify`), and each row's token is sampled exactly as plain
/// decoding would sample it, with the same sampler state; a guess stands while it equals the
/// sampled token. So the answer (greedy or sampled with a seed) is the one plain decoding gives,
/// token for token, and only the number of passes changes. (Standard rejection sampling would
/// accept more of a sampled answer's guesses, but gives another answer for the same seed.)
/// Runs only for a job stepping alone: batched rounds already share each pass's weight reads.
public struct Speculation: Sendable {
    /// A job's drafter, given the job's sequence capacity.
    public let makeDrafter: @Sendable (_ capacity: Int) -> any Drafter
    /// Most tokens drafted per step.
    public let maxDraft: Int
    let drafted: Counter
    let accepted: Counter
    let steps: Counter

    /// One stateless drafter for every job.
    public init(drafter: some Drafter & Sendable, maxDraft: Int, metrics: Metrics = Metrics()) {
        self.init(makeDrafter: { _ in drafter }, maxDraft: maxDraft, metrics: metrics)
    }

    public init(
        makeDrafter: @escaping @Sendable (_ capacity: Int) -> any Drafter, maxDraft: Int, metrics: Metrics = Metrics()
    ) {
        self.makeDrafter = makeDrafter
        self.maxDraft = max(1, maxDraft)
        drafted = metrics.counter(
            "inferd_speculative_drafted_tokens_total", help: "Tokens proposed by the drafter for verification.")
        accepted = metrics.counter(
            "inferd_speculative_accepted_tokens_total",
            help: "Drafted tokens that decoding confirmed (each saved a pass over the weights).")
        steps = metrics.counter(
            "inferd_speculative_steps_total", help: "Decode steps that verified drafted tokens in one pass.")
    }
}
