extension ModelConfig {
    /// The sizes of a mixture-of-experts feed-forward (`Architecture.expertGating`).
    public struct Experts: Sendable, Equatable {
        /// Experts per layer (`{arch}.expert_count`).
        public var count: Int
        /// Experts each token uses (`{arch}.expert_used_count`).
        public var used: Int
        /// Hidden width of one expert (`{arch}.expert_feed_forward_length`, else the dense width
        /// divided by `used`, as llama.cpp reads it).
        public var feedForwardLength: Int
    }

    /// The experts' sizes from the file's metadata, for an architecture with experts.
    static func readExperts(
        gguf: GGUFFile, prefix: String, denseWidth: Int?
    ) throws(ModelError) -> Experts {
        guard let count = gguf.optionalInt(prefix + "expert_count") else {
            throw .missingMetadata(key: prefix + "expert_count")
        }
        guard let used = gguf.optionalInt(prefix + "expert_used_count") else {
            throw .missingMetadata(key: prefix + "expert_used_count")
        }
        guard count > 0, used > 0, used <= count else {
            throw .invalidHyperParameter("expert_used_count \(used) must be in 1...expert_count (\(count))")
        }
        let width = gguf.optionalInt(prefix + "expert_feed_forward_length") ?? (denseWidth ?? 0) / used
        guard width > 0 else {
            throw .missingMetadata(key: prefix + "expert_feed_forward_length")
        }
        return Experts(count: count, used: used, feedForwardLength: width)
    }
}
