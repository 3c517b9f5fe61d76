#!/usr/bin/env bash
# Benchmark (not a test): the production path of issue #12, every part in one run, one after the
# other on this box (each part starts its own sandbox and PostgreSQL cluster; see each script):
#   1. scripts/peer-bench.sh: refresh validation beside the peers of ../shared/peers over HTTPS
#      (nghttpx in front of the sandbox for both), at C=64, 256 and 512: items/s, client, PostgreSQL,
#      sandbox and proxy CPU per item, and the ratios siwa-jobs / peer, in PEER_ROUNDS (3) interleaved
#      rounds with their medians;
#   2. scripts/http2-bench.sh: HTTP/1.1 keep-alive against HTTP/2 multiplexing through nghttpx,
#      and HTTP/1.1 straight to the sandbox's HTTPS, at C=512 and 256;
#   3. scripts/million-bench.sh (HTTPS): planning time, throughput per tenth, peak RSS and the
#      database's growth for a 1,000,000-account validation.
# Then the lines that carry the targets, gathered. Takes about 25 minutes with the defaults.
# Options via environment: PEER_ACCOUNTS (40000), PEER_CS ("64 256 512"), PEER_ROUNDS (3), H2_ACCOUNTS (40000),
# MILLION_ACCOUNTS (1000000); each script's own options pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d /tmp/siwa-production-bench.XXXXXX)
echo "== 1. side by side with the peers (log: $logs/peer.log)"
ROUNDS=${PEER_ROUNDS:-3} scripts/peer-bench.sh "${PEER_ACCOUNTS:-40000}" "${PEER_CS:-64 256 512}" 2>&1 | tee "$logs/peer.log"
echo "== 2. HTTP/1.1 and HTTP/2 (log: $logs/http2.log)"
ACCOUNTS=${H2_ACCOUNTS:-40000} scripts/http2-bench.sh 2>&1 | tee "$logs/http2.log"
echo "== 3. one million items (log: $logs/million.log)"
ACCOUNTS=${MILLION_ACCOUNTS:-1000000} SANDBOX_FLAGS=--tls scripts/million-bench.sh 2>&1 | tee "$logs/million.log"
echo
echo "== summary"
grep -E "^(round [0-9]+: |median: )?C=[0-9]+ vs " "$logs/peer.log" || true
grep -E "^C=[0-9]+ through nghttpx" "$logs/http2.log" || true
grep -E "^planning time|^last tenth|^worker peak RSS|^growth from planning" "$logs/million.log" || true
echo "logs: $logs"
