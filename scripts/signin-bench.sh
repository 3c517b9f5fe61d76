#!/usr/bin/env bash
# Benchmark (not a test): sign-in latency beside the nightly validation (issue #10; README
# "Sign-in: accounts in through the exchange"), release build, PostgreSQL, the sandbox and ONE
# long-running worker on this box.
#   A refresh validation of ACCOUNTS accounts (default 100,000) drains at C=CONCURRENCY (256)
#   against the sandbox (LATENCY_MS, default 50 ms, on every Apple call, the code exchange too).
#   Once it is 5% done, SIGNINS (default 2,000) sign-ins, authorized beforehand through the
#   sandbox's device endpoint, are submitted through PostgreSQL (`siwa.submit_sign_in`) at RATE
#   per second (100) by one app-side connection. Prints submit-to-outcome p50/p99/max
#   (siwa.sign_ins submitted_at to processed_at; targets p50 <= 120 ms, p99 <= 300 ms), how many
#   were submitted while the validation was still draining, and the validation's throughput; then
#   where the time went (the sign-in results' wait_ms and apple_ms).
# Options via environment: ACCOUNTS, SIGNINS, RATE, CONCURRENCY, LATENCY_MS, PG_DIR
# (/tmp/siwa-signin-bench-pg), PG_PORT (54336). Setup, sandbox and seeding: scripts/multi-worker-lib.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${ACCOUNTS:-100000}
SIGNINS=${SIGNINS:-2000}
RATE=${RATE:-100}
CONCURRENCY=${CONCURRENCY:-256}
LATENCY_MS=${LATENCY_MS:-50}
MW_PGDIR=${PG_DIR:-/tmp/siwa-signin-bench-pg}
MW_PGPORT=${PG_PORT:-54336}
MW_DB=siwa_signin_bench
MW_WORK=$(mktemp -d /tmp/siwa-signin.XXXXXX)
work=$MW_WORK
pids=()
source scripts/multi-worker-lib.sh
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; mw_cleanup; }
trap cleanup EXIT
q() { psql -qtAc "$1"; }

mw_setup
mw_sandbox --latency-ms "$LATENCY_MS"
sandbox=$SIWA_APPLE_BASE_URL
echo "== seeding $ACCOUNTS accounts (sandbox at $sandbox, latency ${LATENCY_MS} ms)"
mw_seed "$ACCOUNTS"

echo "== authorizing $SIGNINS users through the sandbox (the device's side)"
python3 - "$sandbox" "$SIGNINS" "$SIWA_TEAM_ID" "$SIWA_CLIENT_ID" > "$work/signins.sql" <<'PY'
import concurrent.futures, json, os, ssl, sys, urllib.request, uuid
url, n, team, client = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
tls = ssl.create_default_context(cafile=os.environ.get("SIWA_CA_FILE")) if url.startswith("https:") else None
def one(i):
    nonce = f"bench-{i}-{uuid.uuid4()}"
    body = json.dumps({"team_id": team, "client_id": client, "nonce": nonce}).encode()
    req = urllib.request.Request(url + "/__sandbox/authorize", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=tls) as r:
        a = json.load(r)
    return a["identity_token"], a["code"], nonce
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    for token, code, nonce in pool.map(one, range(n)):
        print(f"SELECT siwa.submit_sign_in('{team}', '{client}', '{token}', '{code}', p_nonce => '{nonce}');")
PY

validation=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
echo "== validation job $validation ($(q "SELECT item_count FROM siwa.jobs WHERE id = $validation") items) at C=$CONCURRENCY, one long-running worker"
start=$(date +%s.%N)
"$bin" work --concurrency "$CONCURRENCY" --pool-size 8 --stats > "$work/worker.out" 2> "$work/worker.log" &
worker=$!
pids+=("$worker")
# job_progress: a validation's succeeded range items keep their row (sql/0028_kept_range_items.sql).
done_items() { q "SELECT succeeded + failed + discarded FROM siwa.job_progress WHERE job_id = $validation"; }
until [ "$(done_items)" -ge $(( ACCOUNTS / 20 )) ]; do
  kill -0 "$worker" 2>/dev/null || { echo "the worker exited early" >&2; tail -n 5 "$work/worker.log" >&2; exit 1; }
  sleep 0.2
done
echo "== submitting $SIGNINS sign-ins at $RATE/s through PostgreSQL"
python3 - "$work/signins.sql" "$RATE" <<'PY' | psql -qtA -v ON_ERROR_STOP=1 > /dev/null
import sys, time
lines = open(sys.argv[1]).read().splitlines()
rate = float(sys.argv[2])
t0 = time.monotonic()
for i, line in enumerate(lines):
    delay = t0 + i / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
PY
until [ "$(q "SELECT count(*) FROM siwa.sign_ins WHERE processed_at IS NULL")" -eq 0 ]; do
  kill -0 "$worker" 2>/dev/null || { echo "the worker exited early" >&2; tail -n 5 "$work/worker.log" >&2; exit 1; }
  sleep 0.2
done
until [ "$(done_items)" -ge "$ACCOUNTS" ]; do
  kill -0 "$worker" 2>/dev/null || { echo "the worker exited early" >&2; tail -n 5 "$work/worker.log" >&2; exit 1; }
  sleep 0.2
done
kill -TERM "$worker"
wait "$worker" || true
q "SELECT format('sign-ins: %s submitted, %s created, other outcomes %s; submit-to-outcome p50 %s ms, p99 %s ms, max %s ms '
                 || '(targets p50 <= 120 ms, p99 <= 300 ms)',
          count(*), count(*) FILTER (WHERE outcome = 'created'), count(*) FILTER (WHERE outcome <> 'created'),
          round(percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM processed_at - submitted_at))::numeric, 1),
          round(percentile_cont(0.99) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM processed_at - submitted_at))::numeric, 1),
          round(max(1000 * extract(epoch FROM processed_at - submitted_at))::numeric, 1))
   FROM siwa.sign_ins"
q "WITH x AS (SELECT (r.detail->>'wait_ms')::float8 AS w, (r.detail->>'apple_ms')::float8 AS a,
                    1000 * extract(epoch FROM s.processed_at - s.submitted_at) AS t
             FROM siwa.sign_ins s JOIN siwa.job_items i ON (i.payload->>'sign_in_id')::bigint = s.id
             JOIN siwa.results r ON r.item_id = i.id)
   SELECT format('  of which: submit to the worker starting it p50 %s / p99 %s ms; verify + code exchange %s / %s ms; '
                 || 'store and outcome %s / %s ms',
                 round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w)::numeric), round(percentile_cont(0.99) WITHIN GROUP (ORDER BY w)::numeric),
                 round(percentile_cont(0.5) WITHIN GROUP (ORDER BY a)::numeric), round(percentile_cont(0.99) WITHIN GROUP (ORDER BY a)::numeric),
                 round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t - w - a)::numeric),
                 round(percentile_cont(0.99) WITHIN GROUP (ORDER BY t - w - a)::numeric))
   FROM x"
q "WITH v AS (SELECT min(r.created_at) AS t0, max(r.created_at) AS t1, count(*) AS n FROM siwa.results r WHERE r.job_id = $validation)
   SELECT format('validation: %s items in %s s, %s items/s (latency bound C/L = %s/s); %s of the sign-ins were submitted while it drained',
                 v.n, round(extract(epoch FROM v.t1 - v.t0)::numeric, 1),
                 round(v.n / greatest(extract(epoch FROM v.t1 - v.t0), 0.001))::bigint, round($CONCURRENCY * 1000.0 / $LATENCY_MS)::bigint,
                 (SELECT count(*) FROM siwa.sign_ins s WHERE s.submitted_at <= v.t1))
   FROM v"
echo "worker: $(grep -h '^worker' "$work/worker.out" | tr '\n' ' ')"
echo "logs in $work"
