import Benchmark
import Foundation
import InferdServer

// Everything lives in InferdServer: @convention(c) callbacks must never be declared here,
// where Swift 6 makes top-level code MainActor-isolated.
let status = await InferdCLI.run(Array(CommandLine.arguments.dropFirst()), bench: BenchCommand.run)
exit(status)
