#!/usr/bin/env bash
# make fuzz: builds inferd-fuzz with libFuzzer + AddressSanitizer (a separate debug build under
# .build/fuzz, so the normal build is untouched) and runs each target for FUZZ_SECONDS (<= 60).
# New inputs go to .build/fuzz/corpus/<target> (not committed); the committed seeds in
# Fuzz/corpus/<target> are read-only. A crash leaves its reproducer in .build/fuzz/artifacts/;
# copy it into Fuzz/corpus/<target>/ with the fix so the replayer keeps it as a regression input.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
[ "$SECONDS_EACH" -gt 60 ] && SECONDS_EACH=60
TARGETS=${FUZZ_TARGETS:-gguf json http template}
BUILD=.build/fuzz
swift build -c debug --build-path "$BUILD" --product inferd-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DINFERD_FUZZING || exit 1
BIN="$BUILD/debug/inferd-fuzz"
mkdir -p "$BUILD/artifacts"
summary=()
failed=0
for t in $TARGETS; do
  work="$BUILD/corpus/$t"
  mkdir -p "$work"
  log="$BUILD/$t.log"
  echo "fuzzing $t for ${SECONDS_EACH}s (log: $log)"
  INFERD_FUZZ_TARGET=$t "$BIN" "$work" "Fuzz/corpus/$t" -max_total_time="$SECONDS_EACH" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$BUILD/artifacts/$t-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  corpus=$(ls "$work" | wc -l)
  if [ $rc -eq 0 ]; then
    summary+=("$(printf '%-5s ok     runs=%-9s coverage=%-6s corpus=%s' "$t" "$runs" "$cov" "$corpus")")
  else
    failed=1
    artifact=$(ls -t "$BUILD/artifacts/$t-"* 2>/dev/null | head -1)
    summary+=("$(printf '%-5s FAILED runs=%-9s reproducer=%s' "$t" "$runs" "${artifact:-none}")")
    grep -m1 -E 'ERROR|Fatal error|fatal error' "$log" | sed 's/^/      /'
  fi
done
echo
echo "fuzz summary (${SECONDS_EACH}s per target):"
printf '  %s\n' "${summary[@]}"
exit $failed
