#!/usr/bin/env bash
# Runs every test: installs what is missing, starts a throwaway PostgreSQL (and PgBouncer in front
# of it, SIWA_TEST_PGBOUNCER_PORT, default the PostgreSQL port + 10000), builds with no
# warnings allowed, then `swift test --no-parallel` (unit tests and integration tests against real
# PostgreSQL and the sandbox over real HTTP).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The tests run against this cluster and no other: if it does not start, stop here (never fall
# back to another cluster that happens to be running).
pg_env=$(timeout 90 scripts/pg-up.sh "${SIWA_TEST_PG_DIR:-/tmp/siwa-test-pg}" "${SIWA_TEST_PG_PORT:-54331}") || {
  echo "test.sh: the test PostgreSQL did not start (scripts/pg-up.sh exit $?); see ${SIWA_TEST_PG_DIR:-/tmp/siwa-test-pg}/server.log" >&2
  exit 1
}
eval "$pg_env"
export PGHOST PGPORT PGUSER PGDATABASE
unset DATABASE_URL
# PgBouncer in transaction mode in front of that cluster: the multi-worker tests also run through it
# (they fail, not skip, without SIWA_TEST_PGBOUNCER_PORT).
pgb_port=${SIWA_TEST_PGBOUNCER_PORT:-$((PGPORT + 10000))}
timeout 60 scripts/pgbouncer-up.sh "${SIWA_TEST_PG_DIR:-/tmp/siwa-test-pg}-pgbouncer" "$pgb_port" "$PGPORT" >/dev/null || {
  echo "test.sh: PgBouncer did not start (scripts/pgbouncer-up.sh); see ${SIWA_TEST_PG_DIR:-/tmp/siwa-test-pg}-pgbouncer/pgbouncer.log" >&2
  exit 1
}
export SIWA_TEST_PGBOUNCER_PORT=$pgb_port

echo "== build (warnings are errors)"
log=$(mktemp)
swift build --build-tests 2>&1 | tee "$log" | grep -E "error|warning:|Compiling|Build" | grep -v "^\[" || true
if grep -E "warning:" "$log" | grep -v "^warning: 'main'" | grep -q .; then
  echo "build produced warnings:" >&2
  grep -E "warning:" "$log" >&2
  exit 1
fi
grep -q "error:" "$log" && { echo "build failed" >&2; exit 1; }

echo "== tests"
swift test --skip-build --no-parallel 2>&1 | tee "$log.test" | grep -vE "^\[[0-9]+/[0-9]+\]" 
status=${PIPESTATUS[0]}
exit "$status"
