/// One entry of the merge table: merging the pair gives `result`; lower `rank` merges first.
struct BPEMergeRule: Sendable {
    let rank: Int32
    /// The symbol the pair becomes: a token id, or an id at or past the vocabulary size for a
    /// merged string that is not itself a token.
    let result: Int32
}
