#!/usr/bin/env bash
# Installs the Debian packages siwa-jobs needs to build, test and run its demo.
# python3-cryptography runs the independent client-secret signature check in the tests; pgbouncer
# (Debian's 1.18) runs the tests' workers behind a pooler in transaction mode (scripts/pgbouncer-up.sh).
# prometheus brings promtool (the metrics tests check the exposition with it) and chromium the
# headless browser the dashboard tests load every page in. nghttp2-proxy brings nghttpx, the HTTP/2 + TLS
# front end of the sandbox in the HTTP/2 tests and scripts/http2-bench.sh.
# libgoogle-perftools-dev brings tcmalloc, the allocator the binary links in place of glibc's malloc.
# Idempotent: does nothing when everything is present.
set -euo pipefail
need=()
for p in libpq-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev libgoogle-perftools-dev postgresql-15 pgbouncer openssl python3 python3-cryptography prometheus chromium nghttp2-proxy; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
