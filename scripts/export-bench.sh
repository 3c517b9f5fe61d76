#!/usr/bin/env bash
# Benchmark (not a test): `results export` of a 100,000-result job streams with bounded memory.
#   scripts/export-bench.sh
# Generates a completed refresh-validation job of ROWS (100000) results with fingerprints and
# external user ids (SQL, generate_series), exports it as CSV and as JSON lines to files, and
# prints rows, size, wall time and the exporter's peak RSS, next to the same for a job a tenth the
# size: bounded memory means the peak does not grow with the job.
# Options via environment: ROWS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-100000}
pgdir=${RETENTION_BENCH_PG_DIR:-/tmp/siwa-retention-bench-pg}   # the retention benchmark's cluster
work=$(mktemp -d /tmp/siwa-export.XXXXXX)
scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${RETENTION_BENCH_PG_PORT:-54335}")"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_export_bench
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS $PGDATABASE WITH (FORCE)" -qc "CREATE DATABASE $PGDATABASE" >/dev/null
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
"$bin" migrate >/dev/null
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning

make_job() {   # $1 rows; prints the job id
  psql -qtAX -v ON_ERROR_STOP=1 <<SQL
BEGIN;
INSERT INTO siwa.jobs (kind, state, item_count) VALUES ('refresh-validation', 'running', $1) RETURNING id AS job \\gset
WITH a AS (INSERT INTO siwa.accounts (external_user_id, team_id, client_id, sub)
           SELECT 'user-' || :job || '-' || g, 'TEAMBENCH1', 'com.example.bench', 'sub-' || :job || '-' || g
           FROM generate_series(1, $1) g RETURNING id)
INSERT INTO siwa.job_items (job_id, account_id, state, attempt, finished_at) SELECT :job, a.id, 'succeeded', 1, now() FROM a;
INSERT INTO siwa.results (item_id, job_id, account_id, outcome, http_status, apple_error, token_fingerprint, attempt, detail)
  SELECT id, job_id, account_id, CASE WHEN id % 20 = 0 THEN 'invalid' ELSE 'valid' END, CASE WHEN id % 20 = 0 THEN 400 ELSE 200 END,
         CASE WHEN id % 20 = 0 THEN 'invalid_grant' END, 'sha256:' || substr(md5(id::text), 1, 16), 1, '{"token_type":"bearer"}'
  FROM siwa.job_items WHERE job_id = :job;
UPDATE siwa.jobs SET state = 'completed', finished_at = now() WHERE id = :job;
COMMIT;
SELECT max(id) FROM siwa.jobs;
SQL
}

measure() {   # $1 job, $2 format, $3 file: prints rows, MB, wall s, peak RSS MB of the exporter
  python3 - "$bin" "$1" "$2" "$3" <<'PY'
import os, resource, subprocess, sys, time
bin, job, fmt, out = sys.argv[1:]
t0 = time.time()
subprocess.run([bin, "results", "export", "--job", job, "--format", fmt, "--out", out], check=True, stderr=subprocess.DEVNULL)
wall = time.time() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
lines = sum(1 for _ in open(out))
print(f"export job={job} format={fmt:<5} lines={lines:>7} size_mb={os.path.getsize(out) / 2**20:6.1f} wall_s={wall:5.2f} peak_rss_mb={rss:6.1f}")
PY
}

small=$(make_job $((ROWS / 10)) | tail -n1)
big=$(make_job "$ROWS" | tail -n1)
psql -qc "VACUUM ANALYZE" >/dev/null   # statistics for the fresh rows, as autovacuum would give them
for fmt in csv jsonl; do
  measure "$small" "$fmt" "$work/small.$fmt"
  measure "$big" "$fmt" "$work/big.$fmt"
done
with_fingerprint=$(grep -c ',sha256:[0-9a-f]\{16\},' "$work/big.csv" || true)
echo "rows with a token fingerprint in the CSV: $with_fingerprint of $ROWS (the export has no token column)"
