import Engine
import Foundation
import Testing

@testable import InferdServer

/// The capacity settings: their three spellings, their checks, and what the engine gets.
@Suite struct AdmissionConfigurationTests {
    func error(_ arguments: [String], _ environment: [String: String] = [:]) -> String {
        do {
            _ = try ServerConfiguration.load(
                arguments: arguments, environment: environment, defaultFile: "/nonexistent.json")
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func defaultsAndSpellingsReachTheEnginePolicy() throws {
        let defaults = ServerConfiguration().admissionPolicy
        #expect(defaults.maxActiveSequences == 8 && defaults.maxQueue == 64)
        #expect(defaults.preemptAfter == .milliseconds(500))
        let c = try ServerConfiguration.load(
            arguments: ["--max-active-sequences", "2", "--preempt-after-ms=50"],
            environment: ["INFERD_MAX_QUEUE": "0"], defaultFile: "/nonexistent.json")
        #expect(
            c.admissionPolicy == AdmissionPolicy(maxActiveSequences: 2, maxQueue: 0, preemptAfter: .milliseconds(50)))
    }

    @Test func badValuesStopStartUpNamingTheSetting() {
        #expect(error(["--max-active-sequences", "0"]).contains("--max-active-sequences is 0, must be at least 1"))
        #expect(error([], ["INFERD_MAX_QUEUE": "-1"]).contains("INFERD_MAX_QUEUE is -1, must be at least 0"))
        #expect(error(["--preempt-after-ms", "soon"]).contains("--preempt-after-ms is \"soon\", expected an integer"))
    }
}
