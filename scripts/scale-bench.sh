#!/usr/bin/env bash
# Scaling benchmark (not a test), everything on this machine: 1, 2 and 4 worker processes at
# concurrency C each drain one refresh validation against a sandbox answering after LATENCY_MS.
#   1. No rate ceiling: items/s over the wall time and the steady rate (the sandbox's answers per
#      second without the first and last 2 s), each with its ratio to one process (targets
#      >= 1.9x for 2, >= 3.6x for 4: the bound is N x C / latency as long as the CPU keeps up).
#   2. A team ceiling of CEILING requests/s (SIWA_APPLE_RATE_LIMIT): the sandbox's own
#      per-second counts show the aggregate respects it whatever the number of processes.
# Every run: 0 duplicate results, 100% terminal, MATCH; and CPU seconds of workers, sandbox and
# PostgreSQL with the share of the machine's cores they used (all share them: when the CPU is
# saturated the ratios say so rather than the scaling of the worker).
# Options via environment: ITEMS (40000), CEILING_ITEMS (6000), CONCURRENCY (128),
# LATENCY_MS (200), CEILING (300), PROCESSES ("1 2 4"), PGPORT_SCALE (54340), PGDIR_SCALE.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${ITEMS:-40000}
CEILING_ITEMS=${CEILING_ITEMS:-6000}
CONCURRENCY=${CONCURRENCY:-128}
LATENCY_MS=${LATENCY_MS:-200}
CEILING=${CEILING:-300}
PROCESSES=${PROCESSES:-"1 2 4"}
MW_PGDIR=${PGDIR_SCALE:-/tmp/siwa-scalebench-pg}
MW_PGPORT=${PGPORT_SCALE:-54340}
MW_DB=siwa_scalebench
MW_WORK=$(mktemp -d /tmp/siwa-scalebench.XXXXXX)
. scripts/multi-worker-lib.sh
trap mw_cleanup EXIT

mw_setup
mw_sandbox --latency-ms "$LATENCY_MS"
mw_seed "$ITEMS"
cpu_share() {   # the share of the machine's cores used by workers, sandbox and PostgreSQL
  echo "$MW_FIGURES" | python3 -c '
import re, sys
t = sys.stdin.read(); wall = float(sys.argv[1])
f = dict(re.findall(r"(\w+)=([0-9.]+)", t))
busy = float(f["cpu_s_workers"]) + float(f["cpu_s_sandbox"]) + float(f["cpu_s_postgres"])
cores = float(f["cores"])
print("cpu_busy=%.0f%% of the cores" % (100 * busy / (wall * cores)))' "$MW_WALL"
}

echo "== 1. no ceiling: $ITEMS validations, C=$CONCURRENCY per process, latency ${LATENCY_MS} ms, $(nproc) cores shared"
# items/s over the whole wall time (process start to the last exit), and the steady rate: the
# sandbox's mean answers per second without the first and last 2 s (start-up and drain tail).
base= steady_base=
for n in $PROCESSES; do
  mw_run "$n" "$CONCURRENCY"
  sandbox_curl -fsS "$SIWA_APPLE_BASE_URL/__sandbox/rate" > "$MW_WORK/free-$n.json"
  rate=$(python3 -c "print(f'{$MW_ITEMS / $MW_WALL:.1f}')")
  steady=$(python3 scripts/rate-chart.py "$MW_WORK/free-$n.json" "$SIWA_TEAM_ID" "$MW_T0" "$MW_T1" --skip 2 --tail 2 |
           grep -o 'mean=[0-9.]*' | cut -d= -f2)
  [ -z "$base" ] && base=$rate && steady_base=$steady
  bound=$(python3 -c "print(f'{$n * $CONCURRENCY / ($LATENCY_MS / 1000):.0f}')")
  echo "processes=$n items_per_s=$rate ratio_to_1=$(python3 -c "print(f'{$rate / $base:.2f}')")" \
       "steady_per_s=$steady steady_ratio_to_1=$(python3 -c "print(f'{$steady / $steady_base:.2f}')") bound_NxC/L=$bound" \
       "wall_s=$MW_WALL $MW_FIGURES $(cpu_share)"
done

echo "== 2. ceiling $CEILING requests/s for the team: $CEILING_ITEMS validations per run (another client of the team)"
export SIWA_CLIENT_ID=com.example.scale-ceiling
mw_seed "$CEILING_ITEMS" --prefix ceiling
for n in $PROCESSES; do
  SIWA_APPLE_RATE_LIMIT=$CEILING mw_run "$n" "$CONCURRENCY"
  sandbox_curl -fsS "$SIWA_APPLE_BASE_URL/__sandbox/rate" > "$MW_WORK/rate-$n.json"
  echo "processes=$n items_per_s=$(python3 -c "print(f'{$MW_ITEMS / $MW_WALL:.1f}')") wall_s=$MW_WALL $MW_FIGURES $(cpu_share)"
  echo "  $(python3 scripts/rate-chart.py "$MW_WORK/rate-$n.json" "$SIWA_TEAM_ID" "$MW_T0" "$MW_T1" --skip 2 --tail 2)"
done
cat "$MW_WORK/summary.txt"
echo "targets: no ceiling: ratio_to_1 >= 1.9 (2 processes) and >= 3.6 (4); with the ceiling: accepted mean <= $CEILING" \
     "and no second far above it for every process count; duplicates=0, terminal_pct=100, MATCH in every run"
echo "logs in $MW_WORK"
