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

    @Test func theKeyShareIsHalfThePlacesUnlessSet() throws {
        // 8 running + 64 waiting: one key holds at most 36, so another always finds room.
        #expect(ServerConfiguration().perKeyMaxGenerations == -1)
        #expect(ServerConfiguration().effectivePerKeyMaxGenerations == 36)
        let small = try ServerConfiguration.load(
            arguments: ["--max-active-sequences", "1", "--max-queue", "0"], environment: [:],
            defaultFile: "/nonexistent.json")
        #expect(small.effectivePerKeyMaxGenerations == 1)
        let set = try ServerConfiguration.load(
            arguments: [], environment: ["INFERD_PER_KEY_MAX_GENERATIONS": "5"], defaultFile: "/nonexistent.json")
        #expect(set.effectivePerKeyMaxGenerations == 5)
        let off = try ServerConfiguration.load(
            arguments: ["--per-key-max-generations=0"], environment: [:], defaultFile: "/nonexistent.json")
        #expect(off.effectivePerKeyMaxGenerations == 0)
        #expect(
            error(["--per-key-max-generations", "-2"]).contains("--per-key-max-generations is -2, must be at least -1"))
    }

    @Test func badValuesStopStartUpNamingTheSetting() {
        #expect(error(["--max-active-sequences", "0"]).contains("--max-active-sequences is 0, must be at least 1"))
        #expect(error([], ["INFERD_MAX_QUEUE": "-1"]).contains("INFERD_MAX_QUEUE is -1, must be at least 0"))
        #expect(error(["--preempt-after-ms", "soon"]).contains("--preempt-after-ms is \"soon\", expected an integer"))
    }
}
