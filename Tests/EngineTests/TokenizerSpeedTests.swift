import Foundation
import Testing

@testable import Engine

/// Load time and encoding speed of each tokenizer family, printed as figures (not timed
/// assertions, apart from the one-second bound on loading Gemma's 262,144-token vocabulary).
@Suite(.serialized) struct TokenizerSpeedTests {
    static let sample = String(
        repeating: "The history of the city is long and complicated, shaped by rivers, trade and wars. "
            + "Naïve café owners served 1,234 guests in 2024; 日本語のテキスト and emoji 😀 too.\n",
        count: 30)

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func report(_ name: String, path: String) throws -> Duration {
        let clock = ContinuousClock()
        var tokenizer: Tokenizer?
        var file: GGUFFile?
        let open = clock.measure { file = try? GGUFFile(path: path) }
        let parsed = try #require(file)
        // The machine is shared: the fastest of three builds is the figure least disturbed.
        var build = Duration.seconds(1000)
        for _ in 0..<3 {
            build = min(build, clock.measure { tokenizer = try? Tokenizer(gguf: parsed) })
        }
        let loaded = try #require(tokenizer)
        let ids = loaded.encode(Self.sample)
        let rounds = 20
        let elapsed = clock.measure { for _ in 0..<rounds { _ = loaded.encode(Self.sample) } }
        let rate = Double(ids.count * rounds) / seconds(elapsed)
        let special = clock.measure {
            for _ in 0..<rounds { _ = loaded.encode(Self.sample, parseSpecial: true) }
        }
        let specialRate = Double(ids.count * rounds) / seconds(special)
        print(
            "tokenizer speed \(name): GGUF parsed in \(open), tokenizer built in \(build); "
                + "\(Self.sample.utf8.count) bytes → \(ids.count) tokens at \(Int(rate)) tokens/s "
                + "(\(Int(specialRate)) tokens/s parsing special tokens)")
        return build
    }

    @Test func gemmaSentencePieceLoadsWellUnderASecond() throws {
        _ = try TokenizerFixtures.gemmaTokenizer()  // fails clearly when the model is missing
        let build = try Self.report("gemma-3 (SPM, 262144 tokens)", path: TokenizerFixtures.gemmaPath)
        #expect(build < .seconds(1))
    }

    @Test func byteLevelBPEFigures() throws {
        _ = try Self.report("smollm2 (BPE smollm, 49152 tokens)", path: try TestFixtures.requireModel())
        let tiny = TestFixtures.referenceRoot.appendingPathComponent("tiny/tiny-llama3.gguf").path
        _ = try Self.report("tiny-llama3 (BPE llama-bpe, 49152 tokens)", path: tiny)
    }
}
