#!/usr/bin/env bash
# Benchmark (not a test): bulk import and token-key rotation (issue #10; README "Importing
# accounts, token keys and credential state"), release build, PostgreSQL on this box.
#   1. Import: a generated CSV of ROWS (default 1,000,000) accounts, each with a refresh token,
#      loaded by `accounts import`: rows/s (target >= 20,000) and the command's peak RSS (target
#      <= 100 MB); then the same file again: 0 rows changed.
#   2. Rekey: REKEY (100,000) seeded accounts under key k1, a refresh validation draining against
#      the sandbox (LATENCY_MS, 20) with k2 current and k1 previous, and `tokens rekey` run beside
#      it. Afterwards: 0 tokens under k1, every item of that validation valid, no token lost; then
#      a second validation with k2 alone (k1 removed) finds every token valid.
# Options via environment: ROWS, REKEY, LATENCY_MS, CONCURRENCY (256), PG_DIR (/tmp/siwa-import-bench-pg),
# PG_PORT (54334).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
ROWS=${ROWS:-1000000}
REKEY=${REKEY:-100000}
LATENCY_MS=${LATENCY_MS:-20}
CONCURRENCY=${CONCURRENCY:-256}
pgdir=${PG_DIR:-/tmp/siwa-import-bench-pg}
work=$(mktemp -d /tmp/siwa-import-bench.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -f "$work"/*.csv; scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"; }
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${PG_PORT:-54334}")"
export PGHOST PGPORT PGUSER
unset DATABASE_URL
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
[ -x "$bin" ] || { echo "build failed" >&2; exit 1; }
fresh() {
  export PGDATABASE=$1
  psql -d postgres -qc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -qc "CREATE DATABASE $1" >/dev/null
  "$bin" migrate >/dev/null
}
q() { psql -qtAc "$1"; }
"$bin" keygen --token-key --out "$work/k1.key" >/dev/null
"$bin" keygen --token-key --out "$work/k2.key" >/dev/null
export SIWA_TEAM_ID=IMPTEAM001 SIWA_CLIENT_ID=com.example.import SIWA_TOKEN_KEY_FILE="$work/k1.key"
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning

echo "== 1. import: generating $ROWS rows with refresh tokens"
python3 - "$work/accounts.csv" "$ROWS" <<'PY'
import os, sys, base64
path, n = sys.argv[1], int(sys.argv[2])
with open(path, 'w') as f:
    f.write('external_user_id,sub,refresh_token,email,is_private_email\n')
    for i in range(1, n + 1):
        r = os.urandom(34)
        token = 'r%s.0.mrq%d.%s' % (r[:16].hex(), i % 10, base64.urlsafe_b64encode(r[16:]).decode().rstrip('='))
        sub = '%06d.%032x.%04d' % (i % 1000000, i * 2654435761 % (1 << 128), i % 10000)
        email = ('%08x@privaterelay.appleid.com' % i) if i % 5 < 3 else ('person.%d@example.com' % i)
        f.write('app-user-%d,%s,%s,%s,%s\n' % (i, sub, token, email, 'true' if i % 5 < 3 else 'false'))
print('generated %d rows, %d bytes' % (n, os.path.getsize(path)))
PY
fresh siwa_import_bench
measure() {   # label, then the command; prints rows/s and peak RSS from the --json summary and /usr/bin/time
  local label=$1; shift
  /usr/bin/time -f "wall_s=%e peak_rss_kb=%M" -o "$work/time.txt" "$@" > "$work/summary.json"
  python3 - "$label" "$work/summary.json" "$work/time.txt" <<'PY'
import json, sys
label, summary, timing = sys.argv[1:]
s = json.load(open(summary))
t = dict(kv.split('=') for kv in open(timing).read().split())
wall, rss = float(t['wall_s']), int(t['peak_rss_kb']) / 1024
print(f"{label}: {s['rows']} rows in {wall:.1f} s = {s['rows'] / wall:,.0f} rows/s (target >= 20,000); peak RSS {rss:.1f} MB "
      f"(target <= 100 MB); changed {s['changed']} (inserted {s['inserted']}, updated {s['updated']}, unchanged "
      f"{s['unchanged']}), tokens encrypted {s['tokens_sealed']}, rejected {s['rejected']}")
PY
}
measure "first import" "$bin" accounts import "$work/accounts.csv" --json
measure "re-import   " "$bin" accounts import "$work/accounts.csv" --json
grep -q '"changed":0' "$work/summary.json" || { echo "FAIL: the re-import changed rows" >&2; exit 1; }
echo "OK: the re-import changed 0 rows"
q "SELECT format('stored: %s accounts, %s with a token', count(*), count(refresh_token_ciphertext)) FROM siwa.accounts"
rm -f "$work/accounts.csv"

echo "== 2. rekey: $REKEY accounts under k1, a validation draining beside 'tokens rekey' (sandbox latency $LATENCY_MS ms)"
fresh siwa_rekey_bench
"$bin" keygen --out "$work/AuthKey_IMPKEY0001.p8" >/dev/null
export SIWA_KEY_ID=IMPKEY0001 SIWA_KEY_FILE="$work/AuthKey_IMPKEY0001.p8"
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token off $SANDBOX_TLS_FLAGS > "$work/sandbox.out" 2> "$work/sandbox.err" &
pids+=($!)
sandbox_env "$work/sandbox.out" || { cat "$work/sandbox.err" >&2; exit 1; }
"$bin" seed --accounts "$REKEY" --revoked-fraction 0 >/dev/null
job=$("$bin" enqueue refresh-validation --safety-stop off | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
export SIWA_TOKEN_KEY_FILE="$work/k2.key" SIWA_TOKEN_KEY_ID=k2 SIWA_TOKEN_KEYS_PREVIOUS="k1:$(cat "$work/k1.key")"
"$bin" doctor | grep "tokens per key id" || true
start=$(date +%s.%N)
"$bin" work --drain --concurrency "$CONCURRENCY" > "$work/worker.out" 2> "$work/worker.log" &
worker=$!
pids+=("$worker")
until [ "$(q "SELECT count(*) FROM siwa.results WHERE job_id = $job")" -gt 0 ]; do
  kill -0 "$worker" 2>/dev/null || { echo "the worker exited early" >&2; tail -n 5 "$work/worker.log" >&2; exit 1; }
  sleep 0.1
done
at_start=$(q "SELECT count(*) FROM siwa.results WHERE job_id = $job")
rekey_start=$(date +%s.%N)
"$bin" tokens rekey --batch-size 1000
rekey_end=$(date +%s.%N)
at_end=$(q "SELECT count(*) FROM siwa.results WHERE job_id = $job")
set +e; wait "$worker"; code=$?; set -e
end=$(date +%s.%N)
python3 - "$start" "$end" "$rekey_start" "$rekey_end" "$REKEY" "$at_start" "$at_end" "$code" <<'PY'
import sys
s, e, rs, re_, n, a, b, code = sys.argv[1:]
s, e, rs, re_, n = float(s), float(e), float(rs), float(re_), int(n)
print(f"rekey: {n} tokens in {re_ - rs:.1f} s ({n / (re_ - rs):,.0f} tokens/s) while the validation went from "
      f"{a} to {b} of {n} results; validation: {e - s:.1f} s, {n / (e - s):,.0f} items/s, worker exit {code}")
PY
q "SELECT format('after rekey: %s tokens under k1 (target 0), %s under k2, %s accounts without a token (target 0); validation: %s valid of %s',
          count(*) FILTER (WHERE refresh_token_key_id = 'k1'), count(*) FILTER (WHERE refresh_token_key_id = 'k2'),
          count(*) FILTER (WHERE refresh_token_ciphertext IS NULL),
          (SELECT count(*) FROM siwa.results WHERE job_id = $job AND outcome = 'valid'), count(*))
   FROM siwa.accounts"
"$bin" doctor | grep "tokens per key id" || true
echo "== a second validation with k2 alone (k1 removed): every token must validate"
unset SIWA_TOKEN_KEYS_PREVIOUS
q "UPDATE siwa.accounts SET token_checked_at = NULL" >/dev/null
job2=$("$bin" enqueue refresh-validation --safety-stop off | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
set +e; "$bin" work --drain --concurrency "$CONCURRENCY" > "$work/worker2.out" 2> "$work/worker2.log"; code2=$?; set -e
q "SELECT format('second validation: %s valid of %s items (target all), worker exit %s', count(*) FILTER (WHERE outcome = 'valid'), count(*), $code2)
   FROM siwa.results WHERE job_id = $job2"
echo "logs in $work (shared machine: figures vary with other load)"
