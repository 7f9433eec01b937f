/// Something that shapes the logits of one generation before each token is sampled and is told
/// which token was chosen: the decode loop's point of variation (a grammar constraint is one).
/// One instance per generation, used only by the engine's thread, one step at a time.
public protocol LogitsProcessor: AnyObject {
    /// Changes `logits` in place (a token that must not come next gets `-infinity`).
    func process(logits: UnsafeMutableBufferPointer<Float>)
    /// The token that was sampled. False when it was not allowed (the processor is then stuck).
    func accept(token: Int32) -> Bool
    /// Nothing may follow: the generation must end now.
    var mustEnd: Bool { get }
    /// The output so far is complete: ending here satisfies the constraint.
    var canEnd: Bool { get }
}
