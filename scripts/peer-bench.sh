#!/usr/bin/env bash
# Benchmark (not a test): refresh-token validation end to end, siwa-jobs beside the peers of
# ../shared/peers (a Python asyncio validator, siwa_peer.py, and a Go one, go-peer), in one run on
# one PostgreSQL cluster (the peers' pg.sh) against one sandbox, the same seeded accounts, the
# systems interleaved at each concurrency. Our copy of peers/e2e_side_by_side.sh: it also serves
# the sandbox over HTTPS (the default; SIWA_PLAIN_HTTP=1 for plain HTTP), keeps the token key
# private (work refuses group-readable keys) and reads the job id from the first line of enqueue.
#
# Usage: scripts/peer-bench.sh [ACCOUNTS (40000)] ["C1 C2 ..." ("64 256 512")]
# Both sides reach the sandbox over HTTPS through nghttpx (scripts/edge-proxy.sh), an HTTP/2 + TLS
# front end as Apple's edge is: each client speaks what it can (siwa-jobs HTTP/2 by default, the
# Python peer's aiohttp HTTP/1.1), with real certificate checks; the sandbox behind it speaks plain
# HTTP on loopback (BACKEND_TLS=1: its own HTTPS too). FRONT=direct: both straight to
# `sandbox --tls` (HTTP/1.1).
# Env: FRONT (nghttpx); LATENCY_MS (50); REFRESH_ID_TOKEN (off, as the issue's table; on for id_tokens);
#      SANDBOX_THREADS (1): the sandbox's event loops. One serves this load (under 10,000 answers/s,
#      about a third of a core) and, on a 2-core machine shared with the client, PostgreSQL and
#      nghttpx, a second loop only adds thread switches that every process pays for: with 2, the
#      sandbox's CPU per answer was about 15% higher and siwa-jobs' about 10% (README "Cost per item");
#      PEERS_DIR (../shared/peers from the repository); PEERS_RUN (the peers' run folder);
#      SIWA_HTTP_VERSION (passed to siwa-jobs); BIN (default: the release build).
#      ROUNDS (1): every system at every C this many times, interleaved (round 1 at every C,
#      then round 2, ...); with more than one, the medians of each figure follow every round's rows.
#      AUTOVACUUM (off: see below; on: the server's default, as peers/e2e_side_by_side.sh).
# Prints per system, C and round: items/s, % of C/L, client CPU ms/item, PostgreSQL CPU ms/item,
# vacuum ms/item, HOT %, sandbox and proxy CPU ms/item, peak RSS; then the ratios siwa-jobs / peer
# (scripts/peer-bench-summary.py).
#
# Autovacuum is off while the benchmark runs (and set back on exit). With it on, a vacuum of
# siwa.accounts (0.3-0.6 s of CPU, after 8,050 dead rows, on the next minute's round) falls in one
# side's window or the next side's: +-0.01 ms/item at 40,000 items, a third of the peer's own
# figure, and charged to whichever side happens to be running. Instead each side's window is
# followed by a VACUUM ANALYZE of the tables it wrote, measured on its own and printed as that side's
# "vacuum ms/item" (the reset before every side also vacuums, as it always did, uncharged).
# Checkpoints are held off the same way (checkpoint_timeout 1h, max_wal_size 4GB): a timed
# checkpoint makes the side then running pay a full-page image for every page it touches first.
# "HOT %" is the share of the side's updates of siwa.accounts that stayed on their page. It rises
# with each reset (UPDATE + VACUUM) as the table spreads out, from about 35% after the seed to
# about 98%, so the seeded table is reset WARMUP times (6) first: otherwise whoever runs first at
# a concurrency meets a tighter table than whoever runs next.
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${1:-40000}; CS=${2:-"64 256 512"}; LAT=${LATENCY_MS:-50}; ROUNDS=${ROUNDS:-1}
PEERS=${PEERS_DIR:-$(cd .. && pwd)/shared/peers}
[ -x "$PEERS/pg.sh" ] || { echo "peer-bench: no peers at $PEERS (set PEERS_DIR)" >&2; exit 2; }
export PEERS_RUN=${PEERS_RUN:-${TMPDIR:-/tmp}/peers-run}; mkdir -p "$PEERS_RUN"
if [ -z "${BIN:-}" ]; then
  swift build -c release 2>&1 | grep -E "error|warning:" || true
  BIN=$(swift build -c release --show-bin-path)/siwa-jobs
fi
PY=$PEERS_RUN/venv/bin/python; W=$(mktemp -d "$PEERS_RUN/bench.XXXX")
"$PEERS/pg.sh" start >/dev/null; [ -x "$PY" ] || "$PEERS/venv.sh" >/dev/null
GOPEER=$PEERS_RUN/go-peer
if [ ! -x "$GOPEER" ] && command -v go >/dev/null; then
  (cd "$PEERS/go-peer" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$PEERS_RUN/gocache go build -o "$GOPEER" .) || true
fi
SYSTEMS="siwa-jobs python-peer"; [ -x "$GOPEER" ] && SYSTEMS="$SYSTEMS go-peer"
ADMIN="$(PEERS_DB=postgres "$PEERS/pg.sh" url)"; export DATABASE_URL="$("$PEERS/pg.sh" url)"
psql "$ADMIN" -qX -c "DROP DATABASE IF EXISTS peers WITH (FORCE)" -c "CREATE DATABASE peers"
PGDATA_DIR=$PEERS_RUN/pg
sb= proxy_pid= held=
cleanup() {
  [ -n "$sb" ] && kill $sb 2>/dev/null
  [ -n "$proxy_pid" ] && kill $proxy_pid 2>/dev/null
  [ -n "$held" ] && psql "$ADMIN" -qXc "ALTER SYSTEM RESET autovacuum" -c "ALTER SYSTEM RESET checkpoint_timeout" \
    -c "ALTER SYSTEM RESET max_wal_size" -c "SELECT pg_reload_conf()" >/dev/null 2>&1
  true
}
trap cleanup EXIT
if [ "${AUTOVACUUM:-off}" = off ]; then
  held=1
  psql "$ADMIN" -qXc "ALTER SYSTEM SET autovacuum = off" -c "ALTER SYSTEM SET checkpoint_timeout = '1h'" \
    -c "ALTER SYSTEM SET max_wal_size = '4GB'" -c "SELECT pg_reload_conf()" >/dev/null
fi
"$BIN" migrate >/dev/null
"$BIN" keygen --out "$W/AuthKey_PEERKEY001.p8" >/dev/null; "$BIN" keygen --token-key --out "$W/token.key" >/dev/null
export SIWA_TEAM_ID=PEERTEAM01 SIWA_KEY_ID=PEERKEY001 SIWA_CLIENT_ID=com.example.peer SIWA_SANDBOX_MODE=1
export SIWA_KEY_FILE=$W/AuthKey_PEERKEY001.p8 SIWA_TOKEN_KEY_FILE=$W/token.key SIWA_LOG_LEVEL=warning SIWA_LOG_FORMAT=json
. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
FRONT=${FRONT:-nghttpx}
# Behind the front end the sandbox speaks plain HTTP on loopback, as a TLS-terminating edge's
# backends do (TLS once, where the clients connect); BACKEND_TLS=1 keeps the sandbox's own HTTPS.
if [ "$FRONT" = nghttpx ] && [ "${BACKEND_TLS:-0}" != 1 ]; then SANDBOX_TLS_FLAGS=; fi
# shellcheck disable=SC2086
"$BIN" sandbox --port 0 --latency-ms "$LAT" --refresh-id-token "${REFRESH_ID_TOKEN:-off}" --threads "${SANDBOX_THREADS:-1}" $SANDBOX_TLS_FLAGS > "$W/sb.out" 2> "$W/sb.err" & sb=$!
sandbox_env "$W/sb.out" || { cat "$W/sb.err" >&2; exit 1; }
ca=${SIWA_CA_FILE:-}
echo "sandbox: $SIWA_APPLE_BASE_URL${ca:+ (CA $ca)}, latency $LAT ms, refresh id_token ${REFRESH_ID_TOKEN:-off}; $ACCOUNTS accounts"
"$BIN" seed --accounts "$ACCOUNTS" --revoked-fraction 0.03 >/dev/null
. scripts/edge-proxy.sh   # edge_proxy_start, tree_cpu
if [ "$FRONT" = nghttpx ]; then
  edge_proxy_start "$W" "$SIWA_APPLE_BASE_URL" "${SIWA_CA_FILE:-}"
  export SIWA_APPLE_BASE_URL=$proxy_url SIWA_CA_FILE=$proxy_trust
  echo "front end: nghttpx $proxy_url (HTTP/2 and HTTP/1.1 over TLS) -> sandbox"
fi
pxcpu() { if [ -n "$proxy_pid" ]; then tree_cpu "$proxy_pid"; else echo 0; fi; }
cpu() { python3 scripts/cpu-seconds.py "$@"; }
reset() { psql "$DATABASE_URL" -qXc "UPDATE siwa.accounts SET token_checked_at=NULL, token_status='unknown'" -c "VACUUM ANALYZE" >/dev/null; }
# The tables written since the last VACUUM ANALYZE (the reset's): what autovacuum would clean
# and analyze after the side, and only that (a database-wide ANALYZE would charge either side
# for sampling every table, 2 s here).
written_tables() { psql "$DATABASE_URL" -AtXc "SELECT string_agg(format('%I.%I', schemaname, relname), ', ') FROM pg_stat_user_tables WHERE n_dead_tup > 0 OR n_mod_since_analyze > 0 OR n_ins_since_vacuum > 0"; }
# Updates of siwa.accounts so far, and how many of them were HOT (the statistics are flushed
# within a second of each transaction; the callers sleep first).
account_updates() { psql "$DATABASE_URL" -AtXc "SELECT n_tup_upd || ' ' || n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'siwa.accounts'::regclass"; }
for _ in $(seq 1 "${WARMUP:-6}"); do reset; done; psql "$DATABASE_URL" -qXc "CHECKPOINT" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
for c in $CS; do
  for sys in $SYSTEMS; do
    reset; sleep 1; u0=$(account_updates); p0=$(cpu --postgres "$PGDATA_DIR"); s0=$(cpu --pid $sb); x0=$(pxcpu)
    if [ $sys = siwa-jobs ]; then
      enq=$("$BIN" enqueue refresh-validation); job=$(echo "$enq" | head -1 | grep -o 'job [0-9]*' | cut -d' ' -f2)
      out=$("$BIN" work --drain --stats --concurrency "$c" 2>"$W/worker.log")
    elif [ $sys = go-peer ]; then
      line=$("$GOPEER" --concurrency "$c")
    else
      line=$("$PY" "$PEERS/siwa_peer.py" --concurrency "$c")
    fi
    sleep 1; p1=$(cpu --postgres "$PGDATA_DIR"); s1=$(cpu --pid $sb); x1=$(pxcpu)   # let the client's backends exit first
    u1=$(account_updates)
    touched=$(written_tables); [ -n "$touched" ] && psql "$DATABASE_URL" -qXc "VACUUM ANALYZE $touched" >/dev/null
    p2=$(cpu --postgres "$PGDATA_DIR")
    # The benchmark's own check of siwa-jobs' verdicts (its job's counts), read after both CPU
    # windows: the peer counts its verdicts in memory, so neither side is charged for checking.
    if [ $sys = siwa-jobs ]; then
      line=$(python3 - "$ACCOUNTS" "$c" "$out" "$(psql "$DATABASE_URL" -AtXc "SELECT valid||' '||invalid FROM siwa.job_progress WHERE job_id=$job")" <<'PY'
import json, re, sys
n, c, out, vi = sys.argv[1:]
f = dict(re.findall(r'(\w+)=([0-9.]+)', out)); v, i = vi.split()
print(json.dumps(dict(system='siwa-jobs', n=int(n), concurrency=int(c), drain_s=float(f['wall_s']),
      items_per_s=round(int(n) / float(f['wall_s'])), drain_cpu_s=float(f['cpu_user_s']) + float(f['cpu_sys_s']),
      peak_rss_mb=float(f['peak_rss_mb']), valid=int(v), invalid=int(i))))
PY
)
    fi
    echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['pg_cpu_s']=round($p1-$p0,2); d['vacuum_cpu_s']=round($p2-$p1,2); d['sandbox_cpu_s']=round($s1-$s0,2); d['proxy_cpu_s']=round($x1-$x0,2); d['bound_per_s']=round($c/($LAT/1000)); u0='$u0'.split(); u1='$u1'.split(); n=int(u1[0])-int(u0[0]); d['hot_pct']=round(100*(int(u1[1])-int(u0[1]))/max(n,1)); d['round']=$round; print(json.dumps(d))" >> "$W/e2e.jsonl"
    tail -1 "$W/e2e.jsonl"
  done
done
done
python3 scripts/peer-bench-summary.py "$W/e2e.jsonl"
