#!/usr/bin/env bash
# Benchmark (not a test): this checkout against an earlier commit, side by side in one run, on the
# same PostgreSQL cluster and the same sandbox, runs interleaved (old, new, old, new, ...) so drift
# on the shared 2-core machine hits both alike.
#   scripts/bench-compare.sh [REF]        REF defaults to HEAD~1 (e.g. the previous release's commit)
# Workloads: the queue alone (no-op kind: claim, lease, result + audit rows) and the refresh
# validation against the sandbox at C=512 (50 ms latency). Prints items/s and CPU seconds of worker
# and PostgreSQL for every run, then the median ratio new/old per workload.
# OLD_BIN=path skips building REF and uses that binary; a REF built here is kept as
# /tmp/siwa-bench-old-<commit> for the next run (OLD_BIN=).
# Options via environment: ROUNDS (3), WORKLOADS ("noop validation"), NOOP_ITEMS (200000),
# ACCOUNTS (60000), LATENCY_MS (50), CONCURRENCY (512).
set -euo pipefail
cd "$(dirname "$0")/.."
REF=${1:-HEAD~1}
ROUNDS=${ROUNDS:-3}
NOOP_ITEMS=${NOOP_ITEMS:-200000}
ACCOUNTS=${ACCOUNTS:-60000}
LATENCY_MS=${LATENCY_MS:-50}
CONCURRENCY=${CONCURRENCY:-512}
WORKLOADS=${WORKLOADS:-"noop validation"}
pgdir=/tmp/siwa-bench-pg
work=$(mktemp -d /tmp/siwa-compare.XXXXXX)
sandbox_pid=
cleanup() {
  [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true
  [ -d "$work/old" ] && git worktree remove --force "$work/old" >/dev/null 2>&1 || true
  scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"
}
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" 54332)"
export PGHOST PGPORT PGUSER
unset DATABASE_URL
cpu() { python3 scripts/cpu-seconds.py "$@"; }

echo "== build: this checkout and $REF (release)"
swift build -c release 2>&1 | grep -E "error|warning:" || true
new_bin=$(swift build -c release --show-bin-path)/siwa-jobs
if [ -n "${OLD_BIN:-}" ]; then
  old_bin=$OLD_BIN     # a release binary of REF built earlier
else
  old_src="$work/old"
  git worktree add -q --detach "$old_src" "$REF"
  (cd "$old_src" && swift build -c release 2>&1 | grep -E "error:" || true)
  old_bin=$(cd "$old_src" && swift build -c release --show-bin-path)/siwa-jobs
  kept=/tmp/siwa-bench-old-$(git rev-parse --short "$REF")
  cp "$old_bin" "$kept" && old_bin=$kept
fi
[ -x "$old_bin" ] || { echo "no release binary for $REF" >&2; exit 1; }
echo "old: $REF ($(git rev-parse --short "$REF")), new: $(git rev-parse --short HEAD) (plus uncommitted changes, if any)"

export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning
"$new_bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token off > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
export SIWA_APPLE_BASE_URL=$(grep -o 'http://[0-9.:]*' "$work/sandbox.out" | head -n1)
export SIWA_SANDBOX_MODE=1   # the local sandbox: its keys verify what it signs

# One database and one team per side, seeded once.
setup_side() {   # $1 = side (old|new), $2 = binary
  local side=$1 bin=$2 db="siwa_cmp_$1"
  PGOPTIONS="-c client_min_messages=warning" psql -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -qc "CREATE DATABASE $db" >/dev/null
  PGDATABASE=$db "$bin" migrate >/dev/null
  "$bin" keygen --out "$work/AuthKey_KEY${side^^}0001.p8" >/dev/null 2>&1 || "$new_bin" keygen --out "$work/AuthKey_KEY${side^^}0001.p8" >/dev/null
  "$new_bin" keygen --token-key --out "$work/token_$side.key" >/dev/null
  side_env "$side"
  PGDATABASE=$db "$bin" seed --accounts "$ACCOUNTS" --revoked-fraction 0.03 >/dev/null
}
side_env() {
  local side=$1
  export PGDATABASE="siwa_cmp_$side"
  export SIWA_TEAM_ID="TEAM${side^^}01" SIWA_KEY_ID="KEY${side^^}0001" SIWA_CLIENT_ID="com.example.$side"
  # 10 characters each: TEAMOLD01 is 9, pad
  SIWA_TEAM_ID=$(printf '%-10s' "$SIWA_TEAM_ID" | tr ' ' 'X'); SIWA_KEY_ID=$(printf '%-10s' "$SIWA_KEY_ID" | tr ' ' 'X')
  export SIWA_KEY_FILE="$work/AuthKey_KEY${side^^}0001.p8" SIWA_TOKEN_KEY_FILE="$work/token_$side.key"
}

run_once() {   # $1 side, $2 binary, $3 workload (noop|validation)
  local side=$1 bin=$2 wl=$3 job out wall items pg0 pg1 wu ws
  side_env "$side"
  if [ "$wl" = noop ]; then
    job=$("$bin" enqueue noop --items "$NOOP_ITEMS" | grep -o 'job [0-9]*' | cut -d' ' -f2)
    set -- --kinds noop --concurrency 1024 --claim-batch 1000 --flush-max 1000
  else
    psql -qtAc "UPDATE siwa.accounts SET token_checked_at = NULL, token_status = 'unknown'" >/dev/null
    job=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
    set -- --concurrency "$CONCURRENCY"
  fi
  psql -qtAc "VACUUM ANALYZE siwa.job_items" >/dev/null
  pg0=$(cpu --postgres "$pgdir/data")
  out=$("$bin" work --drain --stats "$@" 2>"$work/worker-$side.log")
  pg1=$(cpu --postgres "$pgdir/data")
  wall=$(echo "$out" | grep -o 'wall_s=[0-9.]*' | cut -d= -f2)
  wu=$(echo "$out" | grep -o 'cpu_user_s=[0-9.]*' | cut -d= -f2)
  ws=$(echo "$out" | grep -o 'cpu_sys_s=[0-9.]*' | cut -d= -f2)
  items=$(psql -qtAc "SELECT count(*) FROM siwa.results WHERE job_id = $job")
  python3 -c "
import sys
side, wl, items, wall, wu, ws, pg0, pg1 = sys.argv[1:]
rate = int(items) / float(wall)
print(f'{wl:<11} {side:<4} items={int(items):>7} wall_s={float(wall):7.2f} items/s={rate:8.0f} cpu_s worker={float(wu)+float(ws):6.2f} postgres={float(pg1)-float(pg0):6.2f}')
" "$side" "$wl" "$items" "$wall" "$wu" "$ws" "$pg0" "$pg1" | tee -a "$work/results.txt"
}

setup_side old "$old_bin"
setup_side new "$new_bin"
echo "== $ROUNDS rounds, interleaved"
for r in $(seq 1 "$ROUNDS"); do
  for wl in $WORKLOADS; do
    if [ $((r % 2)) = 1 ]; then run_once old "$old_bin" $wl; run_once new "$new_bin" $wl
    else run_once new "$new_bin" $wl; run_once old "$old_bin" $wl; fi
  done
done
echo "== median items/s, new / old; and each round's new/old (the pair ran back to back)"
python3 - "$work/results.txt" $WORKLOADS <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    wl, side = line.split()[:2]
    runs.setdefault((wl, side), []).append(float(re.search(r"items/s=\s*([0-9.]+)", line).group(1)))
for wl in sys.argv[2:]:
    olds, news = runs[(wl, "old")], runs[(wl, "new")]
    old, new = statistics.median(olds), statistics.median(news)
    pairs = [n / o for o, n in zip(olds, news)]
    print(f"{wl:<11} old={old:8.0f} new={new:8.0f} new/old={new/old:5.2f}   per round: "
          + " ".join(f"{p:.2f}" for p in pairs) + f"  median of rounds={statistics.median(pairs):.2f}")
PY
