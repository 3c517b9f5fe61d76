#!/usr/bin/env bash
# Benchmark (not a test): prints figures for two workloads on this machine, with PostgreSQL,
# the sandbox and the worker on the same box.
#   1. the queue alone: a no-op kind that still claims, leases and writes result + audit rows;
#   2. the demo validation against the sandbox at 50 ms latency, at several concurrencies.
# For each: items/s, the latency bound C/L where it applies, CPU seconds of the worker, the
# sandbox and PostgreSQL apart, and the worker's peak RSS.
# Options via environment: NOOP_ITEMS (200000), ACCOUNTS (60000), LATENCY_MS (50), CONCURRENCIES ("64 256 512").
# The sandbox speaks HTTPS (scripts/sandbox-env.sh); SIWA_PLAIN_HTTP=1 for plain http.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sandbox-env.sh
NOOP_ITEMS=${NOOP_ITEMS:-200000}
ACCOUNTS=${ACCOUNTS:-60000}
LATENCY_MS=${LATENCY_MS:-50}
CONCURRENCIES=${CONCURRENCIES:-"64 256 512"}
pgdir=/tmp/siwa-bench-pg
work=$(mktemp -d /tmp/siwa-bench.XXXXXX)
sandbox_pid=
cleanup() { [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true; scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"; }
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" 54332)"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_bench
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_bench WITH (FORCE)" -qc "CREATE DATABASE siwa_bench" >/dev/null
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
"$bin" migrate >/dev/null
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning
cpu() { python3 scripts/cpu-seconds.py "$@"; }

# Runs `work --drain` for job $1 with extra flags; prints one line of figures. $2 = label, $3 = C/L bound or "-".
run_worker() {
  local job=$1 label=$2 bound=$3; shift 3
  psql -qtAc "VACUUM ANALYZE siwa.job_items" >/dev/null
  local pg0 sb0 out items rate wall
  pg0=$(cpu --postgres "$pgdir/data")
  sb0=$([ -n "$sandbox_pid" ] && cpu --pid "$sandbox_pid" || echo 0)
  out=$("$bin" work --drain --stats "$@" 2>"$work/worker.log")
  wall=$(echo "$out" | grep -o 'wall_s=[0-9.]*' | cut -d= -f2)
  items=$(psql -qtAc "SELECT count(*) FROM siwa.results WHERE job_id = $job")
  local pg1 sb1
  pg1=$(cpu --postgres "$pgdir/data")
  sb1=$([ -n "$sandbox_pid" ] && cpu --pid "$sandbox_pid" || echo 0)
  local wu ws rss
  wu=$(echo "$out" | grep -o 'cpu_user_s=[0-9.]*' | cut -d= -f2)
  ws=$(echo "$out" | grep -o 'cpu_sys_s=[0-9.]*' | cut -d= -f2)
  rss=$(echo "$out" | grep -o 'peak_rss_mb=[0-9.]*' | cut -d= -f2)
  python3 - "$label" "$items" "$wall" "$bound" "$wu" "$ws" "$pg0" "$pg1" "$sb0" "$sb1" "$rss" <<'PY'
import sys
label, items, wall, bound, wu, ws, pg0, pg1, sb0, sb1, rss = sys.argv[1:]
items, wall = int(items), float(wall)
rate = items / wall if wall else 0
b = f"{float(bound):8.0f}" if bound != "-" else "       -"
pct = f"{100*rate/float(bound):5.1f}%" if bound != "-" else "    -"
print(f"{label:<28} items={items:>7} wall_s={wall:7.2f} items/s={rate:8.0f} C/L={b} of_bound={pct} "
      f"cpu_s worker={float(wu)+float(ws):6.2f} sandbox={float(sb1)-float(sb0):6.2f} postgres={float(pg1)-float(pg0):6.2f} "
      f"worker_peak_rss_mb={float(rss):6.1f}")
PY
}

echo "== workload 1: the queue alone ($NOOP_ITEMS no-op items; claim, lease, result + audit rows)"
for c in 1024; do
  job=$("$bin" enqueue noop --items "$NOOP_ITEMS" | grep -o 'job [0-9]*' | cut -d' ' -f2)
  run_worker "$job" "noop C=$c" - --kinds noop --concurrency "$c" --claim-batch 1000 --flush-max 1000
done

echo "== workload 2: validation against the sandbox (latency ${LATENCY_MS} ms, $ACCOUNTS accounts)"
"$bin" keygen --out "$work/AuthKey_BENCHKEY01.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=BENCHTEAM1 SIWA_KEY_ID=BENCHKEY01 SIWA_CLIENT_ID=com.example.bench
export SIWA_KEY_FILE="$work/AuthKey_BENCHKEY01.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token off $SANDBOX_TLS_FLAGS > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
sandbox_env "$work/sandbox.out" || { cat "$work/sandbox.err" >&2; exit 1; }
echo "sandbox at $SIWA_APPLE_BASE_URL"
"$bin" seed --accounts "$ACCOUNTS" --revoked-fraction 0.03 >/dev/null
for c in $CONCURRENCIES; do
  # Each run validates every account again: make them due.
  psql -qtAc "UPDATE siwa.accounts SET token_checked_at = NULL, token_status = 'unknown'" >/dev/null
  job=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
  bound=$(python3 -c "print($c / ($LATENCY_MS / 1000.0))")
  run_worker "$job" "validation C=$c" "$bound" --concurrency "$c"
done
echo "targets: queue alone >= 15000 items/s; C=64 >= 90% of C/L; C=512 >= 4000 items/s; worker peak RSS at C=512 <= 150 MB"
