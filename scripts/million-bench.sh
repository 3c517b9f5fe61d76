#!/usr/bin/env bash
# Benchmark (not a test): a 1,000,000-account refresh validation planned and drained on this box
# (issue #12 "1,000,000 items"; README "One million items"), release build, with PostgreSQL, the
# sandbox and the worker sharing the machine. Prints:
#   - the planning time: `enqueue refresh-validation` from start until the job is committed and
#     claimable (target <= 30 s); when slower, the plan's EXPLAIN (ANALYZE, BUFFERS);
#   - the throughput of each tenth of the job, from the results' completion times in ntile order
#     (target: the last tenth within 10% of the first), and when the last tenth is slow the
#     claim's EXPLAIN at the end of the job;
#   - the worker's peak RSS (target <= 150 MB) and CPU, the sandbox's and PostgreSQL's CPU per item;
#   - the database's size after migrate, seeding, planning and the drain, and its biggest relations.
# Options via environment: ACCOUNTS (1000000), CONCURRENCY (512), LATENCY_MS (50), ID_TOKENS (off:
# as bench.sh; on signs an RS256 id_token per answer), SANDBOX_FLAGS (extra sandbox flags),
# PG_DIR (/tmp/siwa-million-pg), PG_PORT (54338).
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${ACCOUNTS:-1000000}
CONCURRENCY=${CONCURRENCY:-512}
LATENCY_MS=${LATENCY_MS:-50}
ID_TOKENS=${ID_TOKENS:-off}
pgdir=${PG_DIR:-/tmp/siwa-million-pg}
work=$(mktemp -d /tmp/siwa-million.XXXXXX)
sandbox_pid=
cleanup() { [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null; wait 2>/dev/null || true; scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"; }
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${PG_PORT:-54338}")"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_million
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_million WITH (FORCE)" -qc "CREATE DATABASE siwa_million" >/dev/null
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
[ -x "$bin" ] || { echo "build failed" >&2; exit 1; }
q() { psql -qtAXc "$1"; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
mib() { python3 -c "import sys; print('%.0f MiB' % (int(sys.argv[1]) / 1048576))" "$1"; }
dbsize() { q "SELECT pg_database_size(current_database())"; }
cpu() { python3 scripts/cpu-seconds.py "$@"; }

"$bin" migrate >/dev/null
size_migrated=$(dbsize)
"$bin" keygen --out "$work/AuthKey_MILLION001.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=MILLIONT01 SIWA_KEY_ID=MILLION001 SIWA_CLIENT_ID=com.example.million
export SIWA_KEY_FILE="$work/AuthKey_MILLION001.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning
. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
# shellcheck disable=SC2086
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token "$ID_TOKENS" $SANDBOX_TLS_FLAGS ${SANDBOX_FLAGS:-} \
  > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
sandbox_env "$work/sandbox.out" || { cat "$work/sandbox.err" >&2; exit 1; }
url=$SIWA_APPLE_BASE_URL

# Every autovacuum and autoanalyze is logged with its CPU, so the drain's report can say which ran
# inside which tenth, with times in UTC as the report reads them (the cluster is this benchmark's own).
psql -d postgres -qX -c "ALTER SYSTEM SET log_autovacuum_min_duration = 0" -c "ALTER SYSTEM SET log_timezone = 'UTC'" \
  -c "SELECT pg_reload_conf()" >/dev/null
log_from=$(wc -l < "$pgdir/server.log")

echo "== seeding $ACCOUNTS accounts (3% revoked) against the sandbox at $url"
t0=$(now)
"$bin" seed --accounts "$ACCOUNTS" --revoked-fraction 0.03 >/dev/null
t1=$(now)
q "VACUUM ANALYZE siwa.accounts" >/dev/null
# The seed's million new rows and the VACUUM's hint bits are dirty in shared_buffers (512 MB,
# smaller than the table): written now, as a checkpoint would have long before a real nightly
# run, rather than by the drain's first tenth as it evicts them. Planning's own writes stay.
q "CHECKPOINT" >/dev/null
size_seeded=$(dbsize)
echo "seeded in $(secs "$t0" "$t1") s"

echo "== planning: enqueue refresh-validation"
t0=$(now)
out=$("$bin" enqueue refresh-validation)
t1=$(now)
plan_s=$(secs "$t0" "$t1")
job=$(echo "$out" | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
items=$(q "SELECT item_count FROM siwa.jobs WHERE id = $job")
claimable=$(q "SELECT count(*) FROM siwa.job_items WHERE job_id = $job AND state = 'available'")
size_planned=$(dbsize)
echo "planning time: $plan_s s for $items items ($claimable claimable at once; target <= 30 s)"
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 30 else 1)" "$plan_s"; then
  echo "-- planning is slow: the plan's statement, explained (rolled back)"
  psql -qX -c "BEGIN" -c "EXPLAIN (ANALYZE, BUFFERS) INSERT INTO siwa.job_items (job_id, account_id, max_attempts)
    SELECT $job, a.id, 5 FROM siwa.accounts a WHERE a.team_id = '$SIWA_TEAM_ID' AND a.client_id = '$SIWA_CLIENT_ID'
    AND a.refresh_token_ciphertext IS NOT NULL AND a.deleted_at IS NULL AND a.consent_revoked_at IS NULL
    AND a.token_status NOT IN ('invalid', 'revoked') ORDER BY a.id" -c "ROLLBACK"
fi

echo "== drain (C=$CONCURRENCY, sandbox latency $LATENCY_MS ms, id_tokens $ID_TOKENS)"
pg0=$(cpu --postgres "$pgdir/data"); sb0=$(cpu --pid "$sandbox_pid")
drain_t0=$(now)
set +e
stats=$("$bin" work --drain --stats --concurrency "$CONCURRENCY" 2> "$work/worker.log")
code=$?
set -e
pg1=$(cpu --postgres "$pgdir/data"); sb1=$(cpu --pid "$sandbox_pid")
size_drained=$(dbsize)
echo "worker exit code: $code"
echo "$stats" | tail -n 3

echo "== throughput of each tenth of the job (results in completion order)"
q "SELECT tenth, count(*), extract(epoch FROM min(created_at)), extract(epoch FROM max(created_at))
   FROM (SELECT created_at, ntile(10) OVER (ORDER BY created_at, item_id) AS tenth FROM siwa.results WHERE job_id = $job) r
   GROUP BY tenth ORDER BY tenth" > "$work/tenths.txt"
python3 - "$work/tenths.txt" "$stats" "$CONCURRENCY" "$LATENCY_MS" "$pg0" "$pg1" "$sb0" "$sb1" <<'PY'
import re, sys
path, stats, c, lat, pg0, pg1, sb0, sb1 = sys.argv[1:]
rows = [l.split('|') for l in open(path).read().split() if l]
rows = [(int(t), int(n), float(lo), float(hi)) for t, n, lo, hi in rows]
def stat(name):
    m = re.search(name + r'=([0-9.]+)', stats)
    return float(m.group(1)) if m else float('nan')
rates, prev = [], None
for tenth, n, lo, hi in rows:
    start = lo if prev is None else prev
    rates.append(n / max(hi - start, 1e-6))
    print(f"tenth {tenth:>2}: {n:>7} items in {hi - start:6.1f} s = {rates[-1]:7.0f} items/s")
    prev = hi
total = sum(n for _, n, _, _ in rows)
bound = float(c) / (float(lat) / 1000)
span = rows[-1][3] - rows[0][2] if rows else 0
print(f"whole job: {total} results in {span:.1f} s = {total / max(span, 1e-6):.0f} items/s (C/L {bound:.0f}/s)")
if rates:
    ratio = rates[-1] / rates[0]
    print(f"last tenth / first tenth: {ratio:.2f} (target >= 0.90: {'met' if ratio >= 0.9 else 'NOT met'})")
rss, wall = stat('peak_rss_mb'), stat('wall_s')
cpu_w = stat('cpu_user_s') + stat('cpu_sys_s')
print(f"worker peak RSS: {rss:.1f} MB (target <= 150 MB: {'met' if rss <= 150 else 'NOT met'}); wall {wall:.1f} s")
if total:
    print(f"CPU ms per item: worker {1000 * cpu_w / total:.3f}, sandbox {1000 * (float(sb1) - float(sb0)) / total:.3f}, "
          f"postgres {1000 * (float(pg1) - float(pg0)) / total:.3f}")
PY

echo "== autovacuum and autoanalyze of siwa's tables from seeding to the end of the drain (server log; they share the 2 cores)"
tail -n +"$((log_from + 1))" "$pgdir/server.log" > "$work/server-since-seeding.log"
python3 - "$work/tenths.txt" "$drain_t0" "$work/server-since-seeding.log" <<'PY'
import re, sys, datetime
tenths = [tuple(map(float, l.split('|'))) for l in open(sys.argv[1]).read().split() if l]
t0 = float(sys.argv[2])
lines, found = open(sys.argv[3]).read().splitlines(), 0
for i, line in enumerate(lines):
    m = re.match(r'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) (\w+) .*automatic (vacuum|analyze) of table "([^"]+)"', line)
    if not m:
        continue
    at = datetime.datetime.strptime(m.group(1), '%Y-%m-%d %H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
    if '.pg_catalog.' in m.group(4):
        continue
    usage = None
    for later in lines[i + 1:i + 40]:   # the entry's own lines, up to the next entry
        if 'automatic ' in later:
            break
        usage = usage or re.search(r'CPU: user: ([0-9.]+) s, system: ([0-9.]+) s, elapsed: ([0-9.]+) s', later)
    cpu = f"{float(usage.group(1)) + float(usage.group(2)):.2f} s CPU over {float(usage.group(3)):.2f} s" if usage else "CPU not logged"
    where = "before the drain" if at < t0 else next((f"ended in tenth {int(t)}" for t, _, lo, hi in tenths if at <= hi), "after the job")
    print(f"  {m.group(3)} of {m.group(4)}: ended {at - t0:+.1f} s from the drain's start ({where}), {cpu}")
    found += 1
print(f"  {found} in all" if found else "  none")
PY

last_rate=$(python3 - "$work/tenths.txt" <<'PY'
import sys
rows = [tuple(map(float, l.split('|'))) for l in open(sys.argv[1]).read().split() if l]
first = rows[0][1] / max(rows[0][3] - rows[0][2], 1e-6)
last = rows[-1][1] / max(rows[-1][3] - rows[-2][3], 1e-6)
print('slow' if last < 0.9 * first else 'ok')
PY
)
if [ "$last_rate" = slow ]; then
  echo "-- the last tenth is slow: the claim's plan on the drained job's partition now"
  psql -qX -c "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM siwa.job_items WHERE job_id = $job AND state = 'available'
    AND run_at <= now() ORDER BY run_at, id LIMIT 512"
fi

echo "== database size"
for pair in "after migrate:$size_migrated" "after seeding:$size_seeded" "after planning:$size_planned" "after the drain:$size_drained"; do
  echo "${pair%%:*}: $(mib "${pair##*:}")"
done
python3 -c "import sys; a, b, n = map(int, sys.argv[1:]); print('growth from planning and the drain: %.0f MiB, %.0f bytes per item' % ((b - a) / 1048576, (b - a) / max(n, 1)))" \
  "$size_seeded" "$size_drained" "$items"
echo "biggest relations (partitions summed into their parent; tables with their indexes and TOAST):"
psql -qX -P pager=off -c "SELECT coalesce(pg_partition_root(c.oid), c.oid)::regclass AS relation,
    pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS total, pg_size_pretty(sum(pg_indexes_size(c.oid))) AS indexes
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'siwa' AND c.relkind = 'r'
  GROUP BY 1 ORDER BY sum(pg_total_relation_size(c.oid)) DESC LIMIT 8"
echo "logs: $work"
exit "$code"
