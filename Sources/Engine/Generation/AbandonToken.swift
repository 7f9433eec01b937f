/// Cancels a generation when the last holder (sequence or iterator) goes away; harmless
/// after the generation has finished.
final class AbandonToken: Sendable {
    let action: @Sendable () -> Void
    init(_ action: @escaping @Sendable () -> Void) { self.action = action }
    deinit { action() }
}
