# Sourced by the demo and the benchmarks: their sandbox speaks HTTPS by default (issue #12).
# `siwa-jobs sandbox --tls` makes a throwaway CA at start, prints "sandbox CA file: PATH" and
# then "sandbox listening on https://127.0.0.1:PORT"; every client trusts the CA through
# SIWA_CA_FILE (in addition to the system store). SIWA_PLAIN_HTTP=1 serves plain http instead,
# for a comparison.
#   SANDBOX_TLS_FLAGS   the flags to add to `siwa-jobs sandbox` (--tls, or nothing)
#   sandbox_env OUT     waits until OUT (the sandbox's stdout) says "listening on", then exports
#                       SIWA_APPLE_BASE_URL, SIWA_CA_FILE (HTTPS only) and SIWA_SANDBOX_MODE=1;
#                       returns 1 when the sandbox did not start
#   sandbox_curl ARG..  curl trusting the sandbox's CA
SANDBOX_TLS_FLAGS=--tls
if [ "${SIWA_PLAIN_HTTP:-0}" = 1 ]; then SANDBOX_TLS_FLAGS=; fi
sandbox_env() {
  local out=$1 ca
  for _ in $(seq 1 200); do grep -q "listening on" "$out" 2>/dev/null && break; sleep 0.1; done
  SIWA_APPLE_BASE_URL=$(grep -oE 'https?://[0-9.:]*' "$out" | head -n1)
  [ -n "$SIWA_APPLE_BASE_URL" ] || { echo "sandbox did not start ($out)" >&2; return 1; }
  export SIWA_APPLE_BASE_URL
  export SIWA_SANDBOX_MODE=1   # the local sandbox: its keys verify what it signs
  ca=$(sed -n 's/^sandbox CA file: //p' "$out" | head -n1)
  if [ -n "$ca" ]; then export SIWA_CA_FILE=$ca; else unset SIWA_CA_FILE; fi
}
sandbox_curl() { curl ${SIWA_CA_FILE:+--cacert "$SIWA_CA_FILE"} "$@"; }
