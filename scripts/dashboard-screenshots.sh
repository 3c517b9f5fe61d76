#!/usr/bin/env bash
# PNG screenshots of the dashboard's job page and token-health page, from headless Chromium:
#   throwaway PostgreSQL -> migrate -> sandbox -> seed 2,000 accounts (4% revoked) -> 14 days of
#   earlier validation verdicts (synthetic results, for the token-health history) -> today's
#   validation drained for real -> a second job left waiting -> `siwa-jobs dashboard` -> screenshots.
# One account's external_user_id is a <script> tag: the job page shows it as text (first row).
# Output: $OUT (default /tmp/siwa-dashboard-screenshots)/job.png and tokens.png (and jobs.png).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
OUT=${OUT:-/tmp/siwa-dashboard-screenshots}
PORT=${PORT:-54350}
work=$(mktemp -d /tmp/siwa-shots.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$OUT"

scripts/install-deps.sh
eval "$(scripts/pg-up.sh /tmp/siwa-shots-pg "$PORT")"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_shots
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_shots WITH (FORCE)" -qc "CREATE DATABASE siwa_shots" >/dev/null

swift build 2>&1 | grep -E "error|warning:|Build complete" || true
bin=$(swift build --show-bin-path)/siwa-jobs
[ -x "$bin" ] || { echo "build failed" >&2; exit 1; }

"$bin" migrate >/dev/null
"$bin" keygen --out "$work/AuthKey_SHOTKEY001.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=SHOTTEAM01 SIWA_KEY_ID=SHOTKEY001 SIWA_CLIENT_ID=com.example.shots
export SIWA_KEY_FILE="$work/AuthKey_SHOTKEY001.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning

"$bin" sandbox --port 0 --latency-ms 20 $SANDBOX_TLS_FLAGS > "$work/sandbox.out" 2> "$work/sandbox.err" &
pids+=($!)
sandbox_env "$work/sandbox.out" || { cat "$work/sandbox.err" >&2; exit 1; }
"$bin" seed --accounts 2000 --revoked-fraction 0.04 >/dev/null

# 14 earlier nights: finished validation jobs with synthetic verdicts (results only, no items). The
# jobs go in first, in a statement of their own: their insert trigger makes the partitions that the
# results need (a statement cannot insert into a partition it creates).
psql -qX >/dev/null <<SQL
INSERT INTO siwa.jobs (kind, spec, state, priority, created_at, finished_at, item_count, created_by)
SELECT 'refresh-validation', jsonb_build_object('team_id', '$SIWA_TEAM_ID', 'client_id', '$SIWA_CLIENT_ID'), 'completed', 7,
       now() - make_interval(days => d), now() - make_interval(days => d) + interval '20 minutes', 2000, 'screenshots'
FROM generate_series(14, 1, -1) AS d;
INSERT INTO siwa.results (item_id, job_id, outcome, http_status, apple_error, attempt, created_at)
SELECT -(j.id * 10000 + n), j.id, CASE WHEN n % 100 < 2 + (j.id % 4) THEN 'invalid' ELSE 'valid' END,
       CASE WHEN n % 100 < 2 + (j.id % 4) THEN 400 ELSE 200 END,
       CASE WHEN n % 100 < 2 + (j.id % 4) THEN 'invalid_grant' END, 1, j.created_at + make_interval(secs => n / 10.0)
FROM siwa.jobs j CROSS JOIN generate_series(1, 1800 + (j.id % 5) * 40) AS n
WHERE j.created_by = 'screenshots';
SQL

out=$("$bin" enqueue refresh-validation)
job=$(echo "$out" | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
"$bin" work --drain --concurrency 64 2> "$work/worker.log" >/dev/null || true
# A hostile app user id on one of today's invalid verdicts: the job page shows it as text.
psql -qX -c "UPDATE siwa.accounts SET external_user_id = '<script>document.title=''pwned''</script>'
             WHERE id = (SELECT max(account_id) FROM siwa.results WHERE job_id = $job AND outcome = 'invalid')" >/dev/null
"$bin" enqueue noop --items 500 >/dev/null   # a job still waiting: 0 % on the jobs page

"$bin" dashboard --port 0 > "$work/dashboard.out" 2> "$work/dashboard.err" &
pids+=($!)
for _ in $(seq 1 100); do grep -q "dashboard on" "$work/dashboard.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/dashboard.out" | head -n1)
[ -n "$url" ] || { echo "dashboard did not start" >&2; cat "$work/dashboard.err" >&2; exit 1; }

shot() {
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run \
    --user-data-dir="$work/chromium" --window-size=1280,"$3" --screenshot="$OUT/$1" "$url$2" >/dev/null 2>&1
  echo "$OUT/$1  <- $url$2"
}
shot job.png "/jobs/$job" 1100
shot tokens.png /tokens 900
shot jobs.png / 700
