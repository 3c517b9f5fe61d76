#!/usr/bin/env bash
# Benchmark (not a test): HTTP/1.1 keep-alive against HTTP/2 multiplexing toward "Apple", on a
# refresh-token validation drain. Debian's nghttpx (package nghttp2-proxy, installed if missing)
# is the HTTPS front end (TLS, ALPN h2 and http/1.1) of the product's sandbox, as Apple's edge is;
# the worker speaks to it with SIWA_HTTP_VERSION=1.1 or 2. A third mode speaks HTTP/1.1 directly
# to the sandbox's own HTTPS (`sandbox --tls`, when this build has it; else plain http), the path
# the demo and the tests take.
# Modes run interleaved at each concurrency, ROUNDS times; each line prints items/s, worker CPU
# ms/item, nghttpx, sandbox and PostgreSQL CPU ms/item and the connections the worker opened.
# Options via environment: ACCOUNTS (40000), LATENCY_MS (50), CONCURRENCIES ("512 256"),
# ROUNDS (2), MODES ("h1-proxy h2-proxy h1-direct"), H2_BENCH_PG_PORT (54337).
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${ACCOUNTS:-40000}
LATENCY_MS=${LATENCY_MS:-50}
CONCURRENCIES=${CONCURRENCIES:-"512 256"}
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-"h1-proxy h2-proxy h1-direct"}
pgdir=${H2_BENCH_PG_DIR:-/tmp/siwa-h2bench-pg}
work=$(mktemp -d /tmp/siwa-h2bench.XXXXXX)
sandbox_pid= proxy_pid=
cleanup() {
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
  [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null
  wait 2>/dev/null || true
  scripts/pg-down.sh "$pgdir" "${PG_UP_STARTED:-0}"
}
trap cleanup EXIT

scripts/install-deps.sh
eval "$(scripts/pg-up.sh "$pgdir" "${H2_BENCH_PG_PORT:-54337}")"
export PGHOST PGPORT PGUSER
export PGDATABASE=siwa_h2bench
unset DATABASE_URL
psql -d postgres -qc "DROP DATABASE IF EXISTS siwa_h2bench WITH (FORCE)" -qc "CREATE DATABASE siwa_h2bench" >/dev/null
swift build -c release 2>&1 | grep -E "error|warning:" || true
bin=$(swift build -c release --show-bin-path)/siwa-jobs
"$bin" migrate >/dev/null
export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=warning
"$bin" keygen --out "$work/AuthKey_H2BENCHKEY.p8" >/dev/null
"$bin" keygen --token-key --out "$work/token.key" >/dev/null
export SIWA_TEAM_ID=H2BENCHTM1 SIWA_KEY_ID=H2BENCHKEY SIWA_CLIENT_ID=com.example.h2bench
export SIWA_KEY_FILE="$work/AuthKey_H2BENCHKEY.p8" SIWA_TOKEN_KEY_FILE="$work/token.key"
export SIWA_SANDBOX_MODE=1

. scripts/edge-proxy.sh   # edge_proxy_start, tree_cpu

# The sandbox: its own HTTPS when this build has `sandbox --tls`, else plain http on loopback.
tls_flag=
"$bin" sandbox --help 2>&1 | grep -q -- "--tls" && tls_flag=--tls
"$bin" sandbox --port 0 --latency-ms "$LATENCY_MS" --refresh-id-token off $tls_flag > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
sandbox_url=$(grep -oE 'https?://[0-9.:]*' "$work/sandbox.out" | head -n1)
[ -n "$sandbox_url" ] || { echo "sandbox did not start" >&2; cat "$work/sandbox.err" >&2; exit 1; }
sandbox_ca=$(grep -o 'CA file: .*' "$work/sandbox.out" | head -n1 | cut -d' ' -f3- || true)

edge_proxy_start "$work" "$sandbox_url" "$sandbox_ca"
export SIWA_CA_FILE=$proxy_trust
h2_check=$(curl -s -o /dev/null -w '%{http_version}' --http2 --cacert "$work/proxy.pem" "$proxy_url/" || true)
echo "sandbox $sandbox_url, nghttpx $proxy_url (curl's check: HTTP/$h2_check over the proxy)"

SIWA_APPLE_BASE_URL=$sandbox_url "$bin" seed --accounts "$ACCOUNTS" --revoked-fraction 0.03 --sandbox "$sandbox_url" >/dev/null
echo "== refresh validation of $ACCOUNTS accounts, sandbox latency ${LATENCY_MS} ms; rounds: $ROUNDS (machine shared: figures are indicative)"

# One drain: prints a JSON line of figures. $1 = mode, $2 = concurrency.
run_mode() {
  local mode=$1 c=$2 url version
  case $mode in
    h1-proxy) url=$proxy_url version=1.1 ;;
    h2-proxy) url=$proxy_url version=2 ;;
    h1-direct) url=$sandbox_url version=1.1 ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  psql -qtAc "UPDATE siwa.accounts SET token_checked_at = NULL, token_status = 'unknown'" -c "VACUUM ANALYZE" >/dev/null
  local job pg0 sb0 px0 out pg1 sb1 px1
  job=$(SIWA_APPLE_BASE_URL=$url "$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
  pg0=$(python3 scripts/cpu-seconds.py --postgres "$pgdir/data"); sb0=$(tree_cpu "$sandbox_pid"); px0=$(tree_cpu "$proxy_pid")
  out=$(SIWA_APPLE_BASE_URL=$url "$bin" work --drain --stats --concurrency "$c" --http-version "$version" 2>"$work/worker-$mode-$c.log") || {
    echo "$mode C=$c: worker failed; see $work/worker-$mode-$c.log" >&2; echo "$out" >&2; exit 1; }
  sleep 0.5
  pg1=$(python3 scripts/cpu-seconds.py --postgres "$pgdir/data"); sb1=$(tree_cpu "$sandbox_pid"); px1=$(tree_cpu "$proxy_pid")
  local items
  items=$(psql -qtAc "SELECT count(*) FROM siwa.results WHERE job_id = $job")
  python3 - "$mode" "$c" "$items" "$out" "$pg0" "$pg1" "$sb0" "$sb1" "$px0" "$px1" "$LATENCY_MS" <<'PY' | tee -a "$work/rows.jsonl"
import json, re, sys
mode, c, items, out, pg0, pg1, sb0, sb1, px0, px1, lat = sys.argv[1:]
f = dict(re.findall(r"(\w+)=([0-9.]+)", out))
n, wall = int(items), float(f["wall_s"])
cpu = float(f["cpu_user_s"]) + float(f["cpu_sys_s"])
print(json.dumps(dict(mode=mode, c=int(c), items=n, wall_s=wall, items_per_s=round(n / wall),
                      of_bound=round(100 * n / wall / (int(c) / (float(lat) / 1000)), 1),
                      worker_ms=round(1000 * cpu / n, 4), proxy_ms=round(1000 * (float(px1) - float(px0)) / n, 4),
                      sandbox_ms=round(1000 * (float(sb1) - float(sb0)) / n, 4), pg_ms=round(1000 * (float(pg1) - float(pg0)) / n, 4),
                      http1=int(f["http1_responses"]), http2=int(f["http2_responses"]), connections=int(f["connections_opened"]),
                      rss_mb=float(f["peak_rss_mb"]))))
PY
}

for round in $(seq 1 "$ROUNDS"); do
  for c in $CONCURRENCIES; do
    for mode in $MODES; do run_mode "$mode" "$c"; done
  done
done

python3 - "$work/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"\n{'mode':<10}{'C':>5}{'runs':>5}{'items/s':>9}{'of C/L':>8}{'worker ms/item':>15}{'nghttpx ms/item':>16}"
      f"{'sandbox ms/item':>16}{'PG ms/item':>11}{'conns':>7}{'h1/h2 responses':>17}")
keys = sorted({(r["c"], r["mode"]) for r in rows}, key=lambda k: (-k[0], k[1]))
med = lambda rs, k: statistics.median(r[k] for r in rs)
summary = {}
for c, mode in keys:
    rs = [r for r in rows if r["c"] == c and r["mode"] == mode]
    summary[(c, mode)] = (med(rs, "items_per_s"), med(rs, "worker_ms"))
    print(f"{mode:<10}{c:>5}{len(rs):>5}{med(rs, 'items_per_s'):>9.0f}{med(rs, 'of_bound'):>7.1f}%{med(rs, 'worker_ms'):>15.4f}"
          f"{med(rs, 'proxy_ms'):>16.4f}{med(rs, 'sandbox_ms'):>16.4f}{med(rs, 'pg_ms'):>11.4f}{med(rs, 'connections'):>7.0f}"
          f"{str(rs[-1]['http1']) + '/' + str(rs[-1]['http2']):>17}")
for c in sorted({k[0] for k in keys}, reverse=True):
    h1, h2 = summary.get((c, "h1-proxy")), summary.get((c, "h2-proxy"))
    if h1 and h2:
        print(f"C={c} through nghttpx: HTTP/2 {h2[0] / h1[0]:.2f}x the items/s of HTTP/1.1, worker CPU per item "
              f"{h2[1] / h1[1]:.2f}x; faster: {'HTTP/2' if h2[0] > h1[0] else 'HTTP/1.1'}")
print("medians over the rounds; nghttpx and sandbox ms/item are 0 for modes that do not use them")
PY
