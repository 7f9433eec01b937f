import Foundation

/// The pass's tensors as files, for finding where inferd's arithmetic and llama.cpp's part:
/// with `INFERD_DUMP_TENSORS=DIR` in the environment every pass writes its tensors as raw
/// float32 (`DIR/NAME.f32`, all rows of the pass, each pass over the last), named as llama.cpp
/// names them in its Gemma 3 graph (`attn_norm-5`, `Kcur-5#2` for the roped keys, `ffn_out-5`,
/// `l_out-5`, `result_output` ...). `scripts/llama-cpp-tensors.cpp` writes llama.cpp's and
/// `scripts/compare-tensors.py` names the first that differs. Off (one nil test) otherwise.
extension LlamaModel {
    static func tensorDumpDirectoryFromEnvironment() -> String? {
        ProcessInfo.processInfo.environment["INFERD_DUMP_TENSORS"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @inline(__always)
    func dumpTensor(_ name: @autoclosure () -> String, _ values: UnsafePointer<Float>, count: Int) {
        guard let directory = tensorDumpDirectory else { return }
        let data = Data(bytes: values, count: count * MemoryLayout<Float>.stride)
        try? data.write(to: URL(fileURLWithPath: directory).appendingPathComponent(name() + ".f32"))
    }
}
