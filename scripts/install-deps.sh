#!/usr/bin/env bash
# Installs the Debian packages siwa-jobs needs to build, test and run its demo.
# python3-cryptography runs the independent client-secret signature check in the tests.
# Idempotent: does nothing when everything is present.
set -euo pipefail
need=()
for p in libpq-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev postgresql-15 openssl python3 python3-cryptography; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
