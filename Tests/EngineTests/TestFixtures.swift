import Foundation

/// Where tests find the real model and llama.cpp's reference outputs. Tests that need them
/// fail with a clear message when they are missing (`make test` fetches the model); they never skip.
enum TestFixtures {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var modelPath: String {
        packageRoot.appendingPathComponent("models/SmolLM2-135M-Instruct.Q4_1.gguf").path
    }

    static func requireModel() throws -> String {
        guard FileManager.default.fileExists(atPath: modelPath) else {
            throw FixtureError("model missing at \(modelPath): run `make model` (make test does it)")
        }
        return modelPath
    }

    /// llama.cpp's outputs and the tiny random-weight models (`Tests/Fixtures/reference/`, copied
    /// from the project's shared reference data: `ORIGIN.md` there says where each came from).
    static let referenceRoot: URL = packageRoot.appendingPathComponent("Tests/Fixtures/reference")

    /// A reference file from `Tests/Fixtures/reference/`, parsed as JSON.
    static func reference(_ name: String) throws -> [String: Any] {
        let url = referenceRoot.appendingPathComponent(name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw FixtureError("reference file missing at \(url.path)")
        }
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw FixtureError("reference file \(url.path) is not a JSON object")
        }
        return object
    }

    /// A fresh path in a temporary folder for a file a test writes.
    static func temporaryPath(_ name: String) -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("\(UUID().uuidString)-\(name)").path
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
