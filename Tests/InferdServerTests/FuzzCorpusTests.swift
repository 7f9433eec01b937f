import Foundation
import TestSupport
import Testing

/// Every committed fuzz input (seeds and the reproducers of fixed crashes) replayed through the
/// same targets `make fuzz` runs, by the plain build of `inferd-fuzz`.
@Suite struct FuzzCorpusTests {
    @Test(arguments: ["gguf", "json", "http", "template"])
    func corpusReplaysWithoutACrash(target: String) async throws {
        let root = TestPaths.packageRoot
        let binary = root.appendingPathComponent(".build/release/inferd-fuzz").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ClientError(description: "no release inferd-fuzz at \(binary): build with make test")
        }
        let corpus = root.appendingPathComponent("Fuzz/corpus/\(target)").path
        let (status, output) = try await offPool { () -> (Int32, String) in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = [target, corpus]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(status == 0, "\(output)")
        #expect(output.contains("no crash"))
    }
}
