#!/usr/bin/env bash
# The main job, end to end, on a fresh Debian machine with the Swift toolchain:
#   install what is missing -> throwaway PostgreSQL -> migrate + team key -> sandbox ->
#   seed 100,000 accounts (3% with revoked tokens) -> enqueue the nightly validation ->
#   drain it with a live progress line -> summary from siwa.job_progress vs the sandbox's truth.
# Options via environment: ACCOUNTS (100000), REVOKED (0.03), CONCURRENCY (256), LATENCY_MS (50).
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${ACCOUNTS:-100000}
REVOKED=${REVOKED:-0.03}
CONCURRENCY=${CONCURRENCY:-256}
LATENCY_MS=${LATENCY_MS:-50}
work=$(mktemp -d /tmp/siwa-demo.XXXXXX)
sandbox_pid=
cleanup() { [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== 1. install what is missing"
scripts/install-deps.sh

echo "== 2. throwaway PostgreSQL"
eval "$(scripts/pg-up.sh /tmp/siwa-demo-pg 54330)"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_demo
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_demo WITH (FORCE)" -qc "CREATE DATABASE siwa_demo" >/dev/null

echo "== build (release)"
swift build -c release 2>&1 | grep -E "error|warning:|Compiling siwa|Build complete" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
[ -x "$bin" ] || { echo "build failed" >&2; exit 1; }

echo "== 3. migrate and generate a team key"
"$bin" migrate
"$bin" keygen --out "$work/AuthKey_DEMOKEY001.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=DEMOTEAM01 SIWA_KEY_ID=DEMOKEY001 SIWA_CLIENT_ID=com.example.demo
export SIWA_KEY_FILE="$work/AuthKey_DEMOKEY001.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning

echo "== 4. sandbox (latency ${LATENCY_MS} ms)"
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --latency-jitter-ms 5 > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/sandbox.out" | head -n1)
[ -n "$url" ] || { echo "sandbox did not start" >&2; cat "$work/sandbox.err" >&2; exit 1; }
export SIWA_APPLE_BASE_URL=$url
export SIWA_SANDBOX_MODE=1   # the local sandbox: its keys verify what it signs
echo "sandbox at $url"
"$bin" doctor

echo "== 5. seed $ACCOUNTS accounts ($REVOKED revoked)"
"$bin" seed --accounts "$ACCOUNTS" --revoked-fraction "$REVOKED"

echo "== 6. enqueue the nightly refresh-token validation"
out=$("$bin" enqueue refresh-validation)
echo "$out"
job=$(echo "$out" | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)

echo "== 7. drain (concurrency $CONCURRENCY)"
start=$(date +%s.%N)
set +e
"$bin" work --drain --concurrency "$CONCURRENCY" --progress --stats 2> "$work/worker.log"
code=$?
set -e
end=$(date +%s.%N)
echo "worker exit code: $code"

echo "== 8. summary"
psql -X -P pager=off -c "SELECT job_id, kind, job_state, items, terminal, succeeded, failed, discarded, valid, invalid, retried FROM siwa.job_progress WHERE job_id = $job"
match=0
"$bin" status --job "$job" --sandbox "$url" || match=$?
python3 -c "import sys; print('wall time of the drain: %.1f s' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$end"
echo "logs: $work/worker.log"
exit $(( code != 0 ? code : match ))
