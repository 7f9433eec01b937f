// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "inferd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "inferd", targets: ["inferd"])
    ],
    targets: [
        // libmicrohttpd from Debian's libmicrohttpd-dev, plus the one thin shim header.
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // GnuTLS's client side, for `inferd healthcheck` against an HTTPS server.
        .systemLibrary(
            name: "CGnuTLS",
            pkgConfig: "gnutls",
            providers: [.apt(["libgnutls28-dev"])]
        ),
        // SQLite from Debian's libsqlite3-dev, plus the one thin shim header.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // libpq from Debian's libpq-dev: the PostgreSQL store (`store_url`), plus one thin shim header.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // libcurl from Debian's libcurl4-openssl-dev, plus the one thin shim header: the HTTP client
        // of the remote backend (streaming, timeouts, cancellation that closes the connection).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // glibc's allocator controls (mallopt), which Swift's Glibc module does not include.
        .systemLibrary(name: "CMalloc"),
        // Hot numeric loops with AVX2 intrinsics, chosen at run time; scalar paths elsewhere.
        .target(name: "CKernels"),
        // Fixed-message, key=value structured logging shared by every layer.
        .target(name: "Telemetry"),
        // Why a request's owner stopped it: the one cancellation vocabulary every layer shares.
        .target(name: "Cancellation"),
        // The one source of time for timing decisions (system clock; tests pass a manual one).
        .target(name: "Timekeeping"),
        // HTTP/SSE over libmicrohttpd. Knows nothing of models or sessions.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "Cancellation", "Telemetry", "Timekeeping"]),
        // What a generation is spoken of in: events, results, errors, usage, sampling options,
        // messages, finish reasons, grammars. Value types and small protocols; no machinery.
        .target(name: "GenerationVocabulary"),
        // GGUF, tokenizer, forward pass, sampler, generation. Knows nothing of HTTP or JSON APIs.
        .target(name: "Engine", dependencies: ["CKernels", "GenerationVocabulary", "Telemetry", "Timekeeping"]),
        // Conversation sessions: queueing actors, kept KV caches, durable transcripts.
        // Knows nothing of HTTP or JSON wire formats.
        // The generation backend protocol (conversation or raw prompt in, events and a result out)
        // and its local implementation, the engine. Routes and sessions see only the protocol.
        .target(name: "Backend", dependencies: ["Engine", "GenerationVocabulary", "Telemetry", "Timekeeping"]),
        // A backend that sends the conversation to an OpenAI-compatible upstream (vLLM, llama.cpp's
        // server, another inferd) over libcurl, streaming its deltas back as snapshots.
        .target(
            name: "RemoteBackend", dependencies: ["Backend", "CCurl", "Engine", "GenerationVocabulary", "Telemetry"]),
        // Structured output front ends (JSON Schema, JSON mode, GBNF) compiling to the grammar IR
        // (and, through the Engine, to the matcher's form). Knows JSON Schema; the Engine does not.
        .target(name: "StructuredOutput", dependencies: ["Engine", "GenerationVocabulary"]),
        // Tool calling: each model family's call markup parsed out of answers (streaming-safe) and
        // grammars that keep calls to the offered tools and their schemas.
        .target(name: "ToolCalling", dependencies: ["GenerationVocabulary", "StructuredOutput"]),
        .target(
            name: "Sessions",
            dependencies: [
                "Backend", "Cancellation", "GenerationVocabulary", "CSQLite", "CLibPQ", "Telemetry", "Timekeeping",
            ]),
        // The chat page's HTML, CSS and JavaScript, compiled into the binary (no file system, no
        // network, no build step): plain files under assets/, embedded by SwiftPM as byte arrays.
        .target(
            name: "ChatPage",
            resources: [
                .embedInCode("assets/index.html"), .embedInCode("assets/app.css"), .embedInCode("assets/app.js"),
                .embedInCode("assets/markdown.js"),
            ]),
        // Configuration, routes and commands: the part that ties HTTP to the engine.
        .target(
            name: "InferdServer",
            dependencies: [
                "ChatPage", "HTTPServer", "Backend", "Cancellation", "Engine", "RemoteBackend", "Sessions",
                "StructuredOutput",
                "Telemetry", "Timekeeping", "ToolCalling", "CGnuTLS", "CMalloc",
            ]),
        // `inferd bench`: engine and HTTP speed measurements, kept out of the library targets.
        .target(
            name: "Benchmark",
            dependencies: [
                "InferdServer", "HTTPServer", "Backend", "Engine", "StructuredOutput", "CKernels", "Telemetry",
                "ToolCalling",
            ]),
        .executableTarget(name: "inferd", dependencies: ["InferdServer", "Benchmark"]),
        // libFuzzer targets (make fuzz builds them with -sanitize=fuzzer); a plain build replays corpora.
        .executableTarget(name: "inferd-fuzz", dependencies: ["InferdServer", "HTTPServer", "Engine"]),
        // Socket-level client and helpers for the suites that drive a real server.
        .target(
            name: "TestSupport", dependencies: ["Backend", "Engine", "Telemetry", "Timekeeping"],
            path: "Tests/TestSupport"),
        .testTarget(
            name: "HTTPServerTests", dependencies: ["Cancellation", "HTTPServer", "TestSupport", "Timekeeping"]),
        // Counts the heap allocations of chosen threads (replaces malloc in the test executable only).
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),
        // Fixtures/ holds data the tests read by path (chat templates and their expected prompts).
        .testTarget(
            name: "EngineTests", dependencies: ["Engine", "CAllocationCounter", "TestSupport", "Timekeeping"],
            exclude: ["Fixtures"]),
        .testTarget(name: "StructuredOutputTests", dependencies: ["StructuredOutput", "Engine"]),
        .testTarget(
            name: "ToolCallingTests",
            dependencies: ["ToolCalling", "StructuredOutput", "Engine", "GenerationVocabulary"]),
        .testTarget(
            name: "SessionsTests",
            dependencies: [
                "Backend", "Cancellation", "Sessions", "Engine", "Telemetry", "TestSupport", "Timekeeping",
            ]),
        .testTarget(
            name: "InferdServerTests",
            dependencies: [
                "Backend", "Cancellation", "ChatPage", "InferdServer", "HTTPServer", "Engine", "RemoteBackend",
                "Sessions", "StructuredOutput", "TestSupport", "Timekeeping",
            ]),
        .testTarget(name: "BackendTests", dependencies: ["Backend", "Engine", "Telemetry", "TestSupport"]),
        .testTarget(
            name: "RemoteBackendTests",
            dependencies: ["Backend", "Engine", "RemoteBackend", "StructuredOutput", "Telemetry", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
