#!/usr/bin/env bash
# Stops the throwaway cluster started by scripts/pg-up.sh (DIR defaults to /tmp/siwa-pg).
#   scripts/pg-down.sh [DIR]                  stops it
#   scripts/pg-down.sh DIR "$PG_UP_STARTED"   a benchmark's exit: stops it only when that pg-up.sh
#                                             call started it (1), and KEEP_PG is not 1
set -euo pipefail
dir=${1:-${SIWA_PG_DIR:-/tmp/siwa-pg}}
if [ $# -ge 2 ] && { [ "$2" != 1 ] || [ "${KEEP_PG:-0}" = 1 ]; }; then exit 0; fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ -f "$dir/data/PG_VERSION" ] && run_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
