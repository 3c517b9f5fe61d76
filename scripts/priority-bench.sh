#!/usr/bin/env bash
# Benchmark (not a test): priorities and fair share in the claim (issue #9; README "Priority and
# fair share"), release build, PostgreSQL, the sandbox, the receiver and one worker on this box.
#   1. Priority: a refresh validation of ACCOUNTS accounts (default 200,000) drains at C=256
#      against the sandbox (50 ms latency). Once it is 10% done, a revocation sweep of SWEEP (100)
#      deleted accounts is enqueued, and NOTIFICATIONS (100) signed notifications are POSTed to
#      `notifications serve` in 10 rounds, 1 s apart. Prints p50/p99/max of POST-to-applied
#      (siwa.notifications received_at, set by the POST's insert, to processed_at; target p99 <= 2 s)
#      and the validation's progress when the sweep finished (target < 50%).
#   2. Fair share: LARGE (100,000) and SMALL (1,000) no-op items of equal priority, enqueued
#      together and drained: the large job's progress when the small one finished (target <= 5%),
#      from the audit rows' ids (the order the completion statements wrote them).
# Options via environment: ACCOUNTS, SWEEP, NOTIFICATIONS, CONCURRENCY (256), LATENCY_MS (50),
# LARGE, SMALL, PG_DIR (/tmp/siwa-bench-pg), PG_PORT (54332).
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${ACCOUNTS:-200000}
SWEEP=${SWEEP:-100}
NOTIFICATIONS=${NOTIFICATIONS:-100}
CONCURRENCY=${CONCURRENCY:-256}
LATENCY_MS=${LATENCY_MS:-50}
LARGE=${LARGE:-100000}
SMALL=${SMALL:-1000}
MW_PGDIR=${PG_DIR:-/tmp/siwa-bench-pg}
MW_PGPORT=${PG_PORT:-54332}
MW_DB=siwa_priority_bench
MW_WORK=$(mktemp -d /tmp/siwa-priority.XXXXXX)
work=$MW_WORK
. scripts/multi-worker-lib.sh
pids=()
cleanup() {
  for pid in "${pids[@]}" $(cat "$work"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  mw_cleanup
}
trap cleanup EXIT

mw_setup
q() { psql -qtAc "$1"; }

# Starts `siwa-jobs $@` in the background, its stdout in $work/$name.out and its pid in
# $work/$name.pid (it runs in a command substitution's subshell); waits for "listening on" and
# prints the URL.
serve() {
  local name=$1; shift
  "$bin" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  echo $! > "$work/$name.pid"
  for _ in $(seq 1 200); do grep -q "listening on" "$work/$name.out" 2>/dev/null && break; sleep 0.1; done
  local url
  url=$(grep -o 'http://[0-9.:]*' "$work/$name.out" | head -n1)
  [ -n "$url" ] || { echo "$name did not start" >&2; cat "$work/$name.err" >&2; exit 1; }
  echo "$url"
}

mw_sandbox --latency-ms "$LATENCY_MS"
sandbox=$SIWA_APPLE_BASE_URL
echo "== seeding $((ACCOUNTS + SWEEP)) accounts (sandbox at $sandbox, latency ${LATENCY_MS} ms)"
mw_seed "$((ACCOUNTS + SWEEP))"
q "UPDATE siwa.accounts SET deleted_at = now() WHERE id IN (SELECT id FROM siwa.accounts ORDER BY id DESC LIMIT $SWEEP)" >/dev/null
validation=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
receiver=$(serve receiver notifications serve --port 0)
q "SELECT sub FROM siwa.accounts WHERE deleted_at IS NULL ORDER BY id LIMIT $NOTIFICATIONS" > "$work/subs.txt"

echo "== 1. priority: validation job $validation ($(q "SELECT item_count FROM siwa.jobs WHERE id = $validation") items) at C=$CONCURRENCY"
start=$(date +%s.%N)
"$bin" work --drain --concurrency "$CONCURRENCY" --stats > "$work/worker.out" 2> "$work/worker.log" &
worker=$!
pids+=("$worker")
# job_progress: a validation's succeeded range items keep their row (sql/0028_kept_range_items.sql).
done_items() { q "SELECT succeeded + failed + discarded FROM siwa.job_progress WHERE job_id = $1"; }
tenth=$(( ACCOUNTS / 10 ))
until [ "$(done_items "$validation")" -ge "$tenth" ]; do
  kill -0 "$worker" 2>/dev/null || { echo "the worker exited early" >&2; tail -n 5 "$work/worker.log" >&2; exit 1; }
  sleep 0.2
done
sweep=$("$bin" enqueue revocation-sweep | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
echo "sweep job $sweep enqueued at $(( $(done_items "$validation") * 100 / ACCOUNTS ))% of the validation"
rounds=10
per=$(( (NOTIFICATIONS + rounds - 1) / rounds ))
for r in $(seq 0 $((rounds - 1))); do
  sed -n "$((r * per + 1)),$(((r + 1) * per))p" "$work/subs.txt" > "$work/subs-$r.txt"
  [ -s "$work/subs-$r.txt" ] || break
  "$bin" notifications send --to "$receiver/" --sandbox "$sandbox" --client-id "$SIWA_CLIENT_ID" \
    --subs-file "$work/subs-$r.txt" --concurrency 4 >> "$work/send.out"
  sleep 1
done
set +e
wait "$worker"
code=$?
set -e
end=$(date +%s.%N)
echo "worker exit $code; $(grep -o 'succeeded=[0-9]* failed=[0-9]* discarded=[0-9]*' "$work/worker.out")"
python3 - "$start" "$end" "$ACCOUNTS" <<'PY'
import sys
start, end, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print(f"validation: {n} items in {end - start:.1f} s, {n / (end - start):.0f} items/s (all three jobs)")
PY
q "SELECT format('notifications: %s posted, %s applied; POST-to-applied p50 %s s, p99 %s s, max %s s (target p99 <= 2 s)',
          count(*), count(processed_at),
          round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))::numeric, 3),
          round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))::numeric, 3),
          round(max(extract(epoch FROM processed_at - received_at))::numeric, 3))
   FROM siwa.notifications"
q "WITH s AS (SELECT max(finished_at) AS t, count(*) FILTER (WHERE state = 'succeeded') AS ok, count(*) AS n
             FROM siwa.job_items WHERE job_id = $sweep)
   SELECT format('sweep: %s of %s items succeeded; the validation was %s%% done when the sweep finished (target < 50%%)',
                 s.ok, s.n, round(100.0 * (SELECT count(*) FROM siwa.results v WHERE v.job_id = $validation
                                            AND v.created_at <= s.t) / $ACCOUNTS, 1))
   FROM s"

echo "== 2. fair share: $LARGE and $SMALL no-op items of equal priority, enqueued together"
large=$("$bin" enqueue noop --items "$LARGE" | grep -o 'job [0-9]*' | cut -d' ' -f2)
small=$("$bin" enqueue noop --items "$SMALL" | grep -o 'job [0-9]*' | cut -d' ' -f2)
q "VACUUM ANALYZE siwa.job_items" >/dev/null
"$bin" work --drain --kinds noop --concurrency "$CONCURRENCY" > "$work/noop.out" 2> "$work/noop.log"
q "SELECT format('fair share: the large job was %s%% done (%s of %s) when the small one (%s items) finished (target <= 5%%)',
          round(100.0 * count(*) / $LARGE, 2), count(*), $LARGE, $SMALL)
   FROM siwa.audit_log WHERE action = 'noop.done' AND job_id = $large
     AND id < (SELECT max(id) FROM siwa.audit_log WHERE action = 'noop.done' AND job_id = $small)"
echo "logs in $work"
