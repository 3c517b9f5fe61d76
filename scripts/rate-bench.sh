#!/usr/bin/env bash
# Rate-budget benchmark (not a test), everything on this machine: WORKERS worker processes at
# concurrency C each drain one refresh validation of ITEMS accounts for one team whose rate
# ceiling is CEILING requests/s (SIWA_APPLE_RATE_LIMIT), against a sandbox that limits the team
# to LIMIT requests/s (token bucket, burst a tenth of a second) and answers 429 with
# Retry-After: RETRY_AFTER. The workers share one budget in PostgreSQL: a 429 lowers the team's
# rate and pauses every worker, then the rate recovers up to 90% of the rate that met it.
#
# Prints the accepted Apple rate per second as a text chart (from the sandbox's own counts), its
# mean/min/max after the first 10 s (target LIMIT +- 10%), 429s as a share of all calls (target
# <= 3%), duplicate results (0), terminal items (100%), MATCH with the sandbox's truth, and CPU
# seconds of workers, sandbox and PostgreSQL (the machine's cores are shared by all of them).
# Options via environment: ITEMS (30000), WORKERS (4), CONCURRENCY (128), CEILING (400),
# LIMIT (250), RETRY_AFTER (1), LATENCY_MS (50), PGPORT_RATE (54339), PGDIR_RATE.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${ITEMS:-30000}
WORKERS=${WORKERS:-4}
CONCURRENCY=${CONCURRENCY:-128}
CEILING=${CEILING:-400}
LIMIT=${LIMIT:-250}
RETRY_AFTER=${RETRY_AFTER:-1}
LATENCY_MS=${LATENCY_MS:-50}
MW_PGDIR=${PGDIR_RATE:-/tmp/siwa-ratebench-pg}
MW_PGPORT=${PGPORT_RATE:-54339}
MW_DB=siwa_ratebench
MW_WORK=$(mktemp -d /tmp/siwa-ratebench.XXXXXX)
. scripts/multi-worker-lib.sh
trap mw_cleanup EXIT

mw_setup
mw_sandbox --latency-ms "$LATENCY_MS" --rate-limit "$LIMIT" --rate-retry-after "$RETRY_AFTER"
mw_seed "$ITEMS"
echo "== rate budget: $ITEMS validations, $WORKERS workers x C=$CONCURRENCY, ceiling $CEILING/s, sandbox limit $LIMIT/s" \
     "(Retry-After $RETRY_AFTER), latency ${LATENCY_MS} ms, $(nproc) cores shared"
SIWA_APPLE_RATE_LIMIT=$CEILING mw_run "$WORKERS" "$CONCURRENCY"
sandbox_curl -fsS "$SIWA_APPLE_BASE_URL/__sandbox/rate" > "$MW_WORK/rate.json"
python3 scripts/rate-chart.py "$MW_WORK/rate.json" "$SIWA_TEAM_ID" "$MW_T0" "$MW_T1" --chart --target "$LIMIT" --tolerance 0.1
echo "wall_s=$MW_WALL items_per_s=$(python3 -c "print(f'{$MW_ITEMS / $MW_WALL:.1f}')") $MW_FIGURES"
psql -qtAc "SELECT 'budget: ' || endpoint || ' rate_rps=' || rate_rps || ' learned_limit_rps=' || coalesce(learned_limit_rps::text, '-')
            || ' ceiling_rps=' || ceiling_rps || ' count_429=' || count_429 || ' permits_granted=' || permits_granted
            FROM siwa.rate_budgets_status"
cat "$MW_WORK/summary.txt"
echo "targets: accepted mean/min/max after 10 s within $LIMIT +- 10%; 429s <= 3% of calls; duplicates=0; terminal_pct=100; MATCH"
echo "logs in $MW_WORK"
