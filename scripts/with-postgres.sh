#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: starts a cluster in a temp folder, exports
# INFERD_TEST_POSTGRES_URL (and INFERD_EXPECT_POSTGRES=1, so the PostgreSQL tests fail rather
# than skip if it is somehow missing), runs the command, and stops the cluster, pass or fail.
#   scripts/with-postgres.sh swift test --filter PostgresStoreTests
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/inferd-pg.XXXXXX)
trap '"$here/pg-cluster.sh" stop "$dir"' EXIT
url=$("$here/pg-cluster.sh" start "$dir")
export INFERD_TEST_POSTGRES_URL="$url" INFERD_EXPECT_POSTGRES=1
"$@"
