#!/usr/bin/env bash
# Chaos benchmark (not a test): the nightly refresh-token validation of ITEMS accounts against a
# sandbox that injects 5% 5xx, 5% 429 (Retry-After 1 s), 1% connection resets and 1% stalls
# (held past the worker's 15 s request timeout), once per seed. For each seed it prints the
# Apple calls per item, the discarded items, whether the job's valid/invalid counts MATCH the
# sandbox's truth, and the worker's exit code. Targets: 0 discarded, MATCH every time, <= 1.2
# calls per item (12% faults cost 1/(1-0.12) = 1.14 calls per item at best).
# Options via environment: ITEMS (20000), SEEDS ("1 2 3"), CONCURRENCY (256), LATENCY_MS (20),
# REVOKED (0.03), PGPORT_CHAOS (54342).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
ITEMS=${ITEMS:-20000}
SEEDS=${SEEDS:-"1 2 3"}
CONCURRENCY=${CONCURRENCY:-256}
LATENCY_MS=${LATENCY_MS:-20}
REVOKED=${REVOKED:-0.03}
pgdir=/tmp/siwa-chaos-pg
work=$(mktemp -d /tmp/siwa-chaos.XXXXXX)
sandbox_pid=
cleanup() { [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true; scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"; }
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${PGPORT_CHAOS:-54342}")"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_chaos
unset DATABASE_URL
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
[ -x "$bin" ] || { echo "build failed" >&2; exit 1; }
"$bin" keygen --out "$work/AuthKey_CHAOSKEY01.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=CHAOSTEAM1 SIWA_KEY_ID=CHAOSKEY01 SIWA_CLIENT_ID=com.example.chaos
export SIWA_KEY_FILE="$work/AuthKey_CHAOSKEY01.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning

echo "== chaos: $ITEMS refresh validations, 5% 5xx + 5% 429 + 1% reset + 1% stall, C=$CONCURRENCY, latency ${LATENCY_MS} ms"
failures=0
for seed in $SEEDS; do
  psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_chaos WITH (FORCE)" -qc "CREATE DATABASE siwa_chaos" >/dev/null
  "$bin" migrate >/dev/null
  "$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token off --seed "$seed" \
    --fault-5xx 0.05 --fault-429 0.05 --fault-reset 0.01 --fault-stall 0.01 $SANDBOX_TLS_FLAGS \
    > "$work/sandbox-$seed.out" 2> "$work/sandbox-$seed.err" &
  sandbox_pid=$!
  sandbox_env "$work/sandbox-$seed.out" || { cat "$work/sandbox-$seed.err" >&2; exit 1; }
  url=$SIWA_APPLE_BASE_URL
  "$bin" seed --accounts "$ITEMS" --revoked-fraction "$REVOKED" >/dev/null
  job=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
  sandbox_curl -fsS -X POST -H "Content-Type: application/json" "$url/__sandbox/reset-stats" >/dev/null
  start=$(date +%s.%N)
  set +e
  "$bin" work --drain --concurrency "$CONCURRENCY" > "$work/worker-$seed.out" 2> "$work/worker-$seed.log"
  code=$?
  set -e
  end=$(date +%s.%N)
  calls=$(sandbox_curl -fsS "$url/__sandbox/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"].get("/auth/token", 0))')
  discarded=$(psql -qtAc "SELECT discarded FROM siwa.job_progress WHERE job_id = $job")
  match=$("$bin" status --job "$job" --sandbox "$url" 2>/dev/null | grep -o 'MISMATCH\|MATCH' | tail -n1 || true)
  python3 - "$seed" "$ITEMS" "$calls" "$discarded" "${match:-MISMATCH}" "$code" "$start" "$end" <<'PY'
import sys
seed, items, calls, discarded, match, code, start, end = sys.argv[1:]
print(f"seed={seed} items={items} apple_calls={calls} calls_per_item={int(calls)/int(items):.3f} "
      f"discarded={discarded} {match} exit={code} wall_s={float(end)-float(start):.1f}")
PY
  if [ "$discarded" != "0" ] || [ "${match:-}" != "MATCH" ] || [ "$code" != "0" ]; then failures=$((failures + 1)); fi
  kill "$sandbox_pid" 2>/dev/null; wait "$sandbox_pid" 2>/dev/null || true
  sandbox_pid=
done
echo "targets: discarded=0, MATCH and exit=0 for every seed, calls_per_item <= 1.2; logs in $work"
[ "$failures" -eq 0 ]
