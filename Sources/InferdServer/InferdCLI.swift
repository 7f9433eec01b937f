import Foundation

/// The `inferd` command line: `serve`, `generate`, `tokenize`.
public enum InferdCLI {
    public static let usage = """
        inferd: an HTTP inference server for language models.

        Usage:
          inferd serve [--name value ...]       Serve the model over HTTP (settings below).
          inferd generate [options] "prompt"    Print the model's answer as it is generated.
          inferd tokenize [--special] [--model PATH] "text"
                                                Print token ids as a JSON array. Special-token
                                                spellings are plain text unless --special.
          inferd bench [--threads 1,2] [--tests pp512,pp64,tg128] [--prompt-lengths 128,512,2048,4096] [--repetitions N] [--json] [--http] [--load N]
                       [--http-tokens N] [--kv-cache-type f16|q8_0] [--no-wait]
                                                Measure prompt and generation speed. Tests: ppN (an
                                                N-token prompt), tgN (N tokens decoded), tgN@D
                                                (after a D-token context), tgNxS (S sequences
                                                decoding together), or none. --http: one
                                                stream over a real socket; --load N: N at once;
                                                --http-tokens: tokens per stream (128);
                                                --kv-cache-type: as the serve setting.
          inferd healthcheck [--host H] [--port P]
                                                Exit 0 when the server's /health answers 200.
          inferd help                           This text.

        generate options: --model PATH, --system TEXT, --max-tokens N, --temperature T,
          --top-k K, --top-p P, --min-p P, --repeat-penalty R, --presence-penalty P,
          --frequency-penalty F (OpenAI's, -2 to 2), --seed S, --stop TEXT (repeatable),
          --threads N, --chat-template NAME|@FILE, --stats (timings on stderr).

        serve settings (flag, environment variable, config-file key):

        """ + ServerConfiguration.helpText + "\n"

    /// `bench` is the `Benchmark` target's (`BenchCommand.run`), handed in by the executable so
    /// the benchmark code stays out of this library.
    public static func run(
        _ arguments: [String], bench: (([String]) async -> Int32)? = nil
    ) async -> Int32 {
        guard let command = arguments.first else {
            FileHandle.standardError.write(Data(usage.utf8))
            return 2
        }
        let rest = Array(arguments.dropFirst())
        let commands = ["serve", "generate", "tokenize", "bench", "healthcheck"]
        if commands.contains(command) && (rest.contains("--help") || rest.contains("-h")) {
            // `inferd bench --help` is what people type first; answer it rather than call it a bad flag.
            print(usage, terminator: "")
            return 0
        }
        switch command {
        case "serve": return await ServeCommand.run(arguments: rest)
        case "generate": return await GenerateCommand.run(arguments: rest)
        case "tokenize": return TokenizeCommand.run(arguments: rest)
        case "bench":
            guard let bench else { return fail("this build has no bench command") }
            return await bench(rest)
        case "healthcheck": return HealthcheckCommand.run(arguments: rest)
        case "help", "--help", "-h":
            print(usage, terminator: "")
            return 0
        default:
            FileHandle.standardError.write(Data("inferd: unknown command \(command)\n\n\(usage)".utf8))
            return 2
        }
    }

    package static func fail(_ message: String, code: Int32 = 1) -> Int32 {
        FileHandle.standardError.write(Data("inferd: \(message)\n".utf8))
        return code
    }
}

/// Command-line options after the subcommand: `--name value` pairs, boolean `--flags`, and
/// positional arguments. Names not in `known`/`booleans` are errors.
package struct CommandOptions {
    package var values: [String: [String]] = [:]
    package var flags: Set<String> = []
    package var positional: [String] = []

    package init(_ arguments: [String], known: Set<String>, booleans: Set<String>) throws(ConfigurationError) {
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            if arg == "--" {
                positional += arguments[(i + 1)...]
                break
            }
            if arg.hasPrefix("--") {
                var name = String(arg.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if booleans.contains(name) {
                    flags.insert(name)
                } else if known.contains(name) {
                    if let v = inline {
                        values[name, default: []].append(v)
                    } else {
                        guard i + 1 < arguments.count else {
                            throw ConfigurationError("option --\(name) needs a value")
                        }
                        values[name, default: []].append(arguments[i + 1])
                        i += 1
                    }
                } else {
                    throw ConfigurationError("unknown option --\(name)")
                }
            } else {
                positional.append(arg)
            }
            i += 1
        }
    }

    package func last(_ name: String) -> String? { values[name]?.last }

    package func int(_ name: String) throws(ConfigurationError) -> Int? {
        guard let raw = last(name) else { return nil }
        guard let v = Int(raw) else { throw ConfigurationError("option --\(name) is \"\(raw)\", expected an integer") }
        return v
    }

    package func float(_ name: String) throws(ConfigurationError) -> Float? {
        guard let raw = last(name) else { return nil }
        guard let v = Float(raw), v.isFinite else {
            throw ConfigurationError("option --\(name) is \"\(raw)\", expected a number")
        }
        return v
    }
}
