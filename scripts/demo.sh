#!/usr/bin/env bash
# The main job, end to end, on a fresh Debian machine with the Swift toolchain:
#   install what is missing -> throwaway PostgreSQL -> migrate + team key -> sandbox ->
#   seed 100,000 accounts (3% with revoked tokens) -> enqueue the nightly validation ->
#   drain it with a live progress line -> summary from siwa.job_progress vs the sandbox's truth.
# Options via environment: ACCOUNTS (100000), REVOKED (0.03), CONCURRENCY (256), LATENCY_MS (50).
# The sandbox speaks HTTPS with a throwaway CA (SIWA_CA_FILE); SIWA_PLAIN_HTTP=1 for plain http.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sandbox-env.sh
ACCOUNTS=${ACCOUNTS:-100000}
REVOKED=${REVOKED:-0.03}
CONCURRENCY=${CONCURRENCY:-256}
LATENCY_MS=${LATENCY_MS:-50}
work=$(mktemp -d /tmp/siwa-demo.XXXXXX)
sandbox_pid=
# On exit: stop the sandbox (it removes its throwaway CA) and delete the throwaway keys; the
# logs stay in $work, and the cluster keeps running for a look around (the last lines say how).
cleanup() {
  [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true
  rm -f "$work/AuthKey_DEMOKEY001.p8" "$work/token.key"
}
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
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --latency-jitter-ms 5 $SANDBOX_TLS_FLAGS \
  > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
sandbox_env "$work/sandbox.out" || { cat "$work/sandbox.err" >&2; exit 1; }
url=$SIWA_APPLE_BASE_URL
echo "sandbox at $url${SIWA_CA_FILE:+ (CA file: $SIWA_CA_FILE)}"
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
items=$(psql -qtAc "SELECT items FROM siwa.job_progress WHERE job_id = $job")
python3 -c "import sys; s, e, n, c, l = map(float, sys.argv[1:]); w = e - s; bound = c / (l / 1000.0)
print('wall time of the drain: %.1f s; %.0f items/s, %.0f%% of C/L (bound %.0f items/s at C=%d, %g ms)' % (w, n / w, 100 * n / w / bound, bound, c, l))" \
  "$start" "$end" "$items" "$CONCURRENCY" "$LATENCY_MS"
echo "logs: $work/worker.log (the throwaway keys are deleted on exit)"
echo "the demo's PostgreSQL is still running for a look around: PGHOST=$PGHOST PGPORT=$PGPORT PGDATABASE=$PGDATABASE psql"
echo "stop it with: scripts/pg-down.sh /tmp/siwa-demo-pg"
exit $(( code != 0 ? code : match ))
