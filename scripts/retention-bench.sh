#!/usr/bin/env bash
# Benchmark (not a test): retention at scale (issue #11, README "Retention and job control").
#   scripts/retention-bench.sh
# 1. Builds a database holding ITEMS (10,000,000) finished no-op items across 30 daily jobs, with
#    their results and audit rows, generated with SQL (generate_series), not the worker. Job k was
#    created 60-k days ago and finished 2 hours later, so jobs 1..29 are past the 30-day retention
#    and job 30 is not. Each job completes through an UPDATE, so its summary is written by the
#    jobs_summarize trigger, as the worker's completion does.
# 2. Queue-alone claim throughput (work --drain on a fresh NOOP_ITEMS no-op job) on that database
#    and on an empty one, interleaved, ROUNDS rounds each, median ratio full/empty.
# 3. `siwa-jobs prune` on the full database: wall time (target <= 30 s), partitions dropped,
#    database size before and after, summaries kept.
# Options via environment: ITEMS (10000000), JOBS (30), NOOP_ITEMS (200000), ROUNDS (3).
# The machine may be shared: figures are this run's, on this box.
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${ITEMS:-10000000}
JOBS=${JOBS:-30}
NOOP_ITEMS=${NOOP_ITEMS:-200000}
ROUNDS=${ROUNDS:-3}
pgdir=${RETENTION_BENCH_PG_DIR:-/tmp/siwa-retention-bench-pg}
work=$(mktemp -d /tmp/siwa-retention.XXXXXX)

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${RETENTION_BENCH_PG_PORT:-54335}")"
export PGHOST PGPORT PGUSER
unset DATABASE_URL
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning
q() { psql -qtAX -v ON_ERROR_STOP=1 "$@"; }

for db in siwa_ret_empty siwa_ret_full; do
  PGOPTIONS="-c client_min_messages=warning" psql -d postgres -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -qc "CREATE DATABASE $db" >/dev/null
  PGDATABASE=$db "$bin" migrate >/dev/null
done

echo "== generating $ITEMS finished items across $JOBS daily jobs (SQL)"
per_job=$(( (ITEMS + JOBS - 1) / JOBS ))
t0=$(date +%s.%N)
for k in $(seq 1 "$JOBS"); do
  age=$(( 2 * JOBS - k ))
  PGDATABASE=siwa_ret_full PGOPTIONS="-c synchronous_commit=off" q <<SQL
BEGIN;
INSERT INTO siwa.jobs (kind, state, created_at, item_count) VALUES ('noop', 'running', now() - interval '$age days', $per_job)
  RETURNING id AS job \\gset
INSERT INTO siwa.job_items (job_id, state, attempt, run_at, first_attempt_at, finished_at)
  SELECT :job, 'succeeded', 1, now() - interval '$age days', now() - interval '$age days',
         now() - interval '$age days' + interval '1 hour'
  FROM generate_series(1, $per_job);
INSERT INTO siwa.results (item_id, job_id, outcome, detail, attempt, created_at)
  SELECT id, job_id, 'succeeded', '{}', 1, finished_at FROM siwa.job_items WHERE job_id = :job;
INSERT INTO siwa.audit_log (at, actor, action, job_id, item_id)
  SELECT finished_at, 'bench', 'noop.done', job_id, id FROM siwa.job_items WHERE job_id = :job;
UPDATE siwa.jobs SET state = 'completed', finished_at = now() - interval '$age days' + interval '2 hours'
  WHERE id = :job;
COMMIT;
SQL
done
PGDATABASE=siwa_ret_full q -c "VACUUM ANALYZE" >/dev/null
t1=$(date +%s.%N)
echo "generated in $(python3 -c "print(round($t1 - $t0, 1))") s: $(PGDATABASE=siwa_ret_full q -c "SELECT count(*) FROM siwa.job_items") items, $(PGDATABASE=siwa_ret_full q -c "SELECT count(*) FROM siwa.item_partitions") partitions"

claim_once() {   # $1 database; prints items/s of the queue alone on a fresh no-op job
  local db=$1 job out wall items
  job=$(PGDATABASE=$db "$bin" enqueue noop --items "$NOOP_ITEMS" | grep -o 'job [0-9]*' | cut -d' ' -f2)
  PGDATABASE=$db q -c "VACUUM ANALYZE siwa.job_items" >/dev/null
  out=$(PGDATABASE=$db "$bin" work --drain --stats --kinds noop --concurrency 1024 --claim-batch 1000 --flush-max 1000 2>"$work/worker-$db.log")
  wall=$(echo "$out" | grep -o 'wall_s=[0-9.]*' | cut -d= -f2)
  items=$(PGDATABASE=$db q -c "SELECT count(*) FROM siwa.results WHERE job_id = $job")
  python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):.0f}')" "$items" "$wall"
}

echo "== queue-alone claim throughput on a fresh $NOOP_ITEMS-item job, $ROUNDS rounds interleaved"
: > "$work/claims.txt"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="siwa_ret_empty siwa_ret_full"; else order="siwa_ret_full siwa_ret_empty"; fi
  for db in $order; do
    rate=$(claim_once "$db")
    echo "round $r $db items/s=$rate" | tee -a "$work/claims.txt"
  done
done
python3 - "$work/claims.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    db = line.split()[2]
    runs.setdefault(db, []).append(float(re.search(r"items/s=([0-9.]+)", line).group(1)))
empty, full = statistics.median(runs["siwa_ret_empty"]), statistics.median(runs["siwa_ret_full"])
print(f"claim median items/s: empty={empty:.0f} full={full:.0f} full/empty={full/empty:.3f} (target >= 0.90)")
PY

echo "== prune (default retention: 30 days)"
size() { PGDATABASE=siwa_ret_full q -c "SELECT pg_database_size(current_database())"; }
before=$(size)
PGDATABASE=siwa_ret_full "$bin" prune --dry-run | tail -n1
t0=$(date +%s.%N)
PGDATABASE=siwa_ret_full "$bin" prune --json > "$work/prune.json"
t1=$(date +%s.%N)
after=$(size)
python3 - "$work/prune.json" "$t0" "$t1" "$before" "$after" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
t0, t1, before, after = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with_jobs = [p for p in report["dropped"] if p["jobs"] > 0]
items = sum(p["items"] for p in report["dropped"])
print(f"prune wall_s={t1 - t0:.2f} (target <= 30) partitions_dropped={len(report['dropped'])} "
      f"(with jobs: {len(with_jobs)}, jobs {sum(p['jobs'] for p in with_jobs)}, items {items}) kept={report['kept']} busy={len(report['busy'])}")
print(f"database size before={before / 2**20:.0f} MiB after={after / 2**20:.0f} MiB "
      f"(dropped {100 * (before - after) / before:.0f}%; the audit log stays for its own 400 days)")
PY
echo "after: $(PGDATABASE=siwa_ret_full q -c "SELECT count(*) FROM siwa.job_items") items left; summaries kept: $(PGDATABASE=siwa_ret_full q -c "SELECT count(*) FROM siwa.job_summaries WHERE kind = 'noop' AND pruned_at IS NOT NULL") pruned jobs, $(PGDATABASE=siwa_ret_full q -c "SELECT count(*) FROM siwa.job_summaries") in all"
rate=$(claim_once siwa_ret_full)
echo "claim after prune (full database): items/s=$rate"
