import Foundation

// `inferd-fuzz`: libFuzzer targets over inferd's input parsers (FuzzTargets.swift, `make fuzz`).
//
// Built with -DINFERD_FUZZING and -sanitize=fuzzer, libFuzzer supplies main() and calls
// LLVMFuzzerTestOneInput for the target named by INFERD_FUZZ_TARGET (gguf, json, http, template).
// Built plainly (as `swift build` does), it is a replayer: `inferd-fuzz TARGET FILE_OR_DIR...`
// runs every input once, so the committed corpora and crash reproducers stay regression tests
// without the fuzzer toolchain. No main.swift: @main (replayer) or libFuzzer's main, never both.

#if INFERD_FUZZING
    let selectedTarget: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["INFERD_FUZZ_TARGET"] ?? ""
        guard let t = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("set INFERD_FUZZ_TARGET to gguf, json, http or template\n".utf8))
            exit(2)
        }
        return t
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        selectedTarget.run(bytes)
        return 0
    }

    /// libFuzzer's entry point for programs that keep their own main().
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    /// SwiftPM links debug executables with main aliased to `<module>_main`, so this module must
    /// define that symbol even when libFuzzer drives it; it hands over to libFuzzer's driver.
    @_cdecl("inferd_fuzz_main")
    public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) }
    }
#else
    @main
    enum Replayer {
        static func main() {
            let arguments = Array(CommandLine.arguments.dropFirst())
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
                FileHandle.standardError.write(Data("usage: inferd-fuzz gguf|json|http|template FILE_OR_DIR...\n".utf8))
                exit(2)
            }
            var count = 0
            for path in arguments.dropFirst() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
                let files =
                    isDirectory.boolValue
                    ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map {
                        "\(path)/\($0)"
                    } : [path]
                for file in files {
                    guard let data = FileManager.default.contents(atPath: file) else { continue }
                    target.run(Array(data))
                    count += 1
                }
            }
            print("inferd-fuzz \(name): replayed \(count) inputs, no crash")
        }
    }
#endif
