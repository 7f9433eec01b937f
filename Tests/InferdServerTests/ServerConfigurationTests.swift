import Engine
import Foundation
import Telemetry
import Testing

@testable import InferdServer

@Suite struct ServerConfigurationTests {
    func file(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("inferd-\(UUID().uuidString).json")
            .path
        try json.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    func error(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func defaultsWithoutAnything() throws {
        let c = try ServerConfiguration.load(arguments: [], environment: [:], defaultFile: "/nonexistent.json")
        #expect(c == ServerConfiguration())
        #expect(c.port == 8080 && c.host == "127.0.0.1" && c.maxBodyBytes == 1 << 20)
    }

    @Test func precedenceIsFlagsThenEnvironmentThenFileThenDefaults() throws {
        let path = try file(#"{"port": 9000, "host": "0.0.0.0", "drain_seconds": 3, "threads": 1}"#)
        let env = ["INFERD_PORT": "9100", "INFERD_DRAIN_SECONDS": "4.5"]
        let c = try ServerConfiguration.load(arguments: ["--config", path, "--port", "9200"], environment: env)
        #expect(c.port == 9200)
        #expect(c.drainSeconds == 4.5)
        #expect(c.host == "0.0.0.0")
        #expect(c.threads == 1)
        #expect(c.heartbeatSeconds == 10)
    }

    @Test func contextLengthCapsOrKeepsTheModelsOwn() throws {
        #expect(try ServerConfiguration.load(arguments: [], environment: [:]).contextLength == 0)
        let c = try ServerConfiguration.load(arguments: ["--context-length", "2048"], environment: [:])
        #expect(c.contextLength == 2048)
        #expect(throws: (any Error).self) {
            _ = try ServerConfiguration.load(arguments: ["--context-length", "-1"], environment: [:])
        }
    }

    @Test func everySettingHasThreeSpellings() throws {
        for s in ServerConfiguration.settings {
            #expect(s.flag == "--" + s.key.replacingOccurrences(of: "_", with: "-"))
            #expect(s.environment == "INFERD_" + s.key.uppercased())
        }
        let c = try ServerConfiguration.load(
            arguments: ["--data-dir=/tmp/x", "--per-ip-connection-limit", "4"],
            environment: ["INFERD_LOG_FORMAT": "json"], defaultFile: "/nonexistent.json")
        #expect(c.dataDir == "/tmp/x" && c.perIPConnectionLimit == 4 && c.logFormat == .json)
    }

    /// `log_format`, `log_level` and `metrics_auth` are enums from the moment they are read: every
    /// name of each parses to its case, and anything else is a start-up error naming the setting.
    @Test func policySettingsAreEnumsCheckedAtStartUp() throws {
        for level in Logger.Level.allCases {
            let c = try ServerConfiguration.load(
                arguments: ["--log-level", level.name], environment: [:], defaultFile: "/nonexistent.json")
            #expect(c.logLevel == level)
        }
        let c = try ServerConfiguration.load(
            arguments: ["--metrics-auth", "open", "--log-format", "json"], environment: [:],
            defaultFile: "/nonexistent.json")
        #expect(c.metricsAuth == .open && c.logFormat == .json)
        for (flag, value) in [("--log-level", "verbose"), ("--log-format", "xml"), ("--metrics-auth", "public")] {
            let message = error {
                _ = try ServerConfiguration.load(
                    arguments: [flag, value], environment: [:], defaultFile: "/nonexistent.json")
            }
            #expect(message.contains(String(flag.dropFirst(2))) && message.contains(value), "\(message)")
        }
        let path = try file(#"{"log_level": "loud"}"#)
        let fromFile = error {
            _ = try ServerConfiguration.load(arguments: ["--config", path], environment: [:])
        }
        #expect(fromFile.contains("log_level") && fromFile.contains("loud"), "\(fromFile)")
    }

    @Test func kvCacheTypeIsReadAsItsEnum() throws {
        let flag = try ServerConfiguration.load(
            arguments: ["--kv-cache-type", "q8_0"], environment: [:], defaultFile: "/nonexistent.json")
        #expect(flag.kvCacheType == .q8_0)
        let env = try ServerConfiguration.load(
            arguments: [], environment: ["INFERD_KV_CACHE_TYPE": "f16"], defaultFile: "/nonexistent.json")
        #expect(env.kvCacheType == .f16)
        let message = error {
            _ = try ServerConfiguration.load(
                arguments: ["--kv-cache-type", "q4_0"], environment: [:], defaultFile: "/nonexistent.json")
        }
        #expect(
            message.contains("--kv-cache-type") && message.contains("q4_0") && message.contains("q8_0"), "\(message)")
    }

    @Test func theShippedFileIsValidAndDocumentsEveryKey() throws {
        let path = TestPaths.packageRoot.appendingPathComponent("config/inferd.json").path
        let c = try ServerConfiguration.load(arguments: ["--config", path], environment: [:])
        var expected = ServerConfiguration()
        expected.threads = c.threads
        #expect(c == expected, "config/inferd.json must hold the built-in defaults")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for s in ServerConfiguration.settings {
            #expect(text.contains("\"// \(s.key)\""), "config/inferd.json does not document \(s.key)")
        }
    }

    @Test func unknownKeyNamesIt() throws {
        let path = try file(#"{"prot": 9000}"#)
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--config", path], environment: [:], defaultFile: "/nonexistent.json")
            }
            .contains("unknown key \"prot\""))
    }

    @Test func badValuesNameTheSettingAndTheSource() throws {
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--port", "eighty"], environment: [:], defaultFile: "/nonexistent.json")
            }
                == "flag --port is \"eighty\", expected an integer")
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: [], environment: ["INFERD_LOG_FORMAT": "xml"], defaultFile: "/nonexistent.json")
            }
                == "environment variable INFERD_LOG_FORMAT is \"xml\", expected one of text, json")
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--threads", "0"], environment: [:], defaultFile: "/nonexistent.json")
            }
                == "flag --threads is 0, must be at least 1")
        let path = try file(#"{"port": true}"#)
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--config", path], environment: [:], defaultFile: "/nonexistent.json")
            }
            .contains("wrong type"))
        let broken = try file(#"{"port": 9"#)
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--config", broken], environment: [:], defaultFile: "/nonexistent.json")
            }
            .contains("not valid JSON"))
    }

    @Test func singleFlightIsOnByDefaultAndTakesTrueOrFalseInEverySpelling() throws {
        #expect(ServerConfiguration().singleFlight)
        let path = try file(#"{"single_flight": false}"#)
        let fromFile = try ServerConfiguration.load(arguments: ["--config", path], environment: [:])
        #expect(!fromFile.singleFlight)
        let fromEnvironment = try ServerConfiguration.load(
            arguments: [], environment: ["INFERD_SINGLE_FLIGHT": "false"], defaultFile: "/nonexistent.json")
        #expect(!fromEnvironment.singleFlight)
        let fromFlag = try ServerConfiguration.load(
            arguments: ["--config", path, "--single-flight", "true"], environment: [:])
        #expect(fromFlag.singleFlight)
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--single-flight", "maybe"], environment: [:], defaultFile: "/nonexistent.json")
            }
                == "flag --single-flight is \"maybe\", expected true or false")
        let quoted = try file(#"{"single_flight": "false"}"#)
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--config", quoted], environment: [:], defaultFile: "/nonexistent.json")
            }
            .contains("wrong type: expected true or false"))
    }

    @Test func unknownFlagAndMissingValue() {
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--prot", "1"], environment: [:], defaultFile: "/nonexistent.json")
            }
                == "unknown flag --prot")
        #expect(
            error {
                _ = try ServerConfiguration.load(
                    arguments: ["--port"], environment: [:], defaultFile: "/nonexistent.json")
            }
                == "flag --port needs a value")
    }
}

enum TestPaths {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// llama.cpp's outputs and the tiny models, kept in the repository (`ORIGIN.md` there).
    static let referenceRoot: URL = packageRoot.appendingPathComponent("Tests/Fixtures/reference")
}
