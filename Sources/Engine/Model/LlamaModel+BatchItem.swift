extension LlamaModel {
    /// One sequence's part of a batched pass.
    public struct BatchItem {
        public var tokens: ArraySlice<Int32>
        public var cache: KVCache
        public var logits: UnsafeMutableBufferPointer<Float>
        /// When positive, `tokens` is a piece of a prompt of this many tokens and its indices
        /// are the positions in it (`forward(prompt:of:cache:logits:)`); when 0, the tokens are
        /// a call of their own (a decode step's token).
        public var promptLength: Int

        public init(
            tokens: ArraySlice<Int32>, cache: KVCache, logits: UnsafeMutableBufferPointer<Float>, promptLength: Int = 0
        ) {
            self.tokens = tokens
            self.cache = cache
            self.logits = logits
            self.promptLength = promptLength
        }
    }
}
