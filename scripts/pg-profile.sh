#!/usr/bin/env bash
# Profiling aid (not a benchmark, not a test): where PostgreSQL's CPU goes in one
# refresh-validation drain, statement by statement.
#   scripts/pg-profile.sh [C] [ACCOUNTS]        # 64 and 40000 by default
# Its own cluster (/tmp/siwa-profile-pg, port 54341) with pg_stat_statements loaded and planning
# tracked, autovacuum off (as scripts/peer-bench.sh runs). It seeds ACCOUNTS, resets them WARMUP (6)
# times so account updates are HOT, drains at concurrency C, and prints PostgreSQL's CPU per item,
# the WAL records and full-page images written, the top statements (calls, rows, execution and
# planning ms, buffer hits, WAL records) and each written table's updates, HOT updates and inserts.
# Options via environment:
#   PRE_SQL       SQL run just before the drain (to try a change: "DROP INDEX siwa.audit_log_account");
#   AUTO_EXPLAIN  a duration ("5ms"): plans of slower statements, with timing, buffers and WAL, go
#                 to /tmp/siwa-profile-pg/server.log (timing inflates the figures; compare shares);
#   LATENCY_MS    the sandbox's latency (50); KEEP_PG=1 keeps the cluster afterwards.
# The sandbox speaks plain HTTP here: this looks at the database only.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${1:-64}; N=${2:-40000}
MW_PGDIR=/tmp/siwa-profile-pg MW_PGPORT=54341 MW_DB=siwa_profile MW_WORK=$(mktemp -d /tmp/siwa-profile.XXXXXX)
SIWA_PLAIN_HTTP=1
. scripts/multi-worker-lib.sh   # the cluster, the build, the team's keys, the sandbox, the seed
trap mw_cleanup EXIT   # stops the sandbox, and the cluster if this run started it (KEEP_PG=1 keeps it)

mw_setup
if [ "$(psql -d postgres -qtAXc "SHOW shared_preload_libraries")" != pg_stat_statements ]; then
  psql -d postgres -qX -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" -c "ALTER SYSTEM SET autovacuum = off"
  started=$PG_UP_STARTED
  scripts/pg-down.sh "$MW_PGDIR"; eval "$(scripts/pg-up.sh "$MW_PGDIR" "$MW_PGPORT")"; PG_UP_STARTED=$started
  export PGDATABASE=$MW_DB
  # Known only once the library is loaded.
  psql -d postgres -qX -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c "SELECT pg_reload_conf()" >/dev/null
fi
psql -qXc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
q() { psql -qtAXc "$1"; }
mw_sandbox --latency-ms "${LATENCY_MS:-50}"
mw_seed "$N"
for _ in $(seq 1 "${WARMUP:-6}"); do
  psql -qXc "UPDATE siwa.accounts SET token_checked_at = NULL, token_status = 'unknown'" -c "VACUUM ANALYZE" >/dev/null
done
[ -n "${PRE_SQL:-}" ] && psql -qXc "$PRE_SQL"
if [ -n "${AUTO_EXPLAIN:-}" ]; then
  psql -qX -c "ALTER DATABASE $MW_DB SET session_preload_libraries = 'auto_explain'" \
    -c "ALTER DATABASE $MW_DB SET auto_explain.log_min_duration = '$AUTO_EXPLAIN'" \
    -c "ALTER DATABASE $MW_DB SET auto_explain.log_analyze = on" -c "ALTER DATABASE $MW_DB SET auto_explain.log_buffers = on" \
    -c "ALTER DATABASE $MW_DB SET auto_explain.log_wal = on" -c "ALTER DATABASE $MW_DB SET auto_explain.log_nested_statements = on"
fi
psql -qXc "CHECKPOINT" -c "SELECT pg_stat_statements_reset()" -c "SELECT pg_stat_reset()" >/dev/null
wal0=$(q "SELECT wal_records || ' ' || wal_fpi FROM pg_stat_wal")
p0=$(python3 scripts/cpu-seconds.py --postgres "$MW_PGDIR/data")
"$bin" enqueue refresh-validation >/dev/null
"$bin" work --drain --stats --concurrency "$C" 2> "$MW_WORK/worker.log"
sleep 1   # the worker's backends exit and the statistics are flushed
p1=$(python3 scripts/cpu-seconds.py --postgres "$MW_PGDIR/data")
wal1=$(q "SELECT wal_records || ' ' || wal_fpi FROM pg_stat_wal")
[ -n "${AUTO_EXPLAIN:-}" ] && psql -qXc "ALTER DATABASE $MW_DB RESET ALL"
python3 - "$N" "$p0" "$p1" "$wal0" "$wal1" <<'PY'
import sys
n, p0, p1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
(r0, f0), (r1, f1) = (map(int, s.split()) for s in sys.argv[4:6])
print(f"PostgreSQL CPU {p1 - p0:.2f} s = {1000 * (p1 - p0) / n:.3f} ms per item; "
      f"WAL records {(r1 - r0) / n:.1f} per item, full-page images {f1 - f0} (after a CHECKPOINT)")
PY
psql -X -c "SELECT calls, rows, round(total_exec_time::numeric) AS exec_ms, round(total_plan_time::numeric) AS plan_ms,
                   shared_blks_hit AS hits, wal_records, left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS statement
            FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT ${TOP:-15}"
psql -X -c "SELECT sum(calls) AS calls, round(sum(total_exec_time)::numeric) AS exec_ms, round(sum(total_plan_time)::numeric) AS plan_ms,
                   sum(wal_records) AS wal_records FROM pg_stat_statements"
psql -X -c "SELECT relname, n_tup_upd AS updates, n_tup_hot_upd AS hot, n_tup_ins AS inserts
            FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0 ORDER BY relname"
