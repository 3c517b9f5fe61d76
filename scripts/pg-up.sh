#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster for tests, the demo and benchmarks, and prints the
# environment to use it. PostgreSQL refuses to run as root, so the cluster runs as 'postgres'.
#
#   eval "$(scripts/pg-up.sh [DIR] [PORT])"     # exports PGHOST, PGPORT, PGUSER, PGDATABASE
#                                               # and sets PG_UP_STARTED (1: started by this call)
#
# DIR defaults to /tmp/siwa-pg, PORT to 54329. Re-running reuses a running cluster.
set -euo pipefail
dir=${1:-${SIWA_PG_DIR:-/tmp/siwa-pg}}
port=${2:-${SIWA_PG_PORT:-54329}}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -n "$bin" ] || { echo "pg-up: PostgreSQL server binaries not found; run scripts/install-deps.sh" >&2; exit 69; }
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  run_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >/dev/null
  cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 512MB
fsync = on
synchronous_commit = on
wal_level = minimal
max_wal_senders = 0
checkpoint_timeout = 15min
max_wal_size = 4GB
log_min_messages = warning
CONF
fi
# Members of role siwa_password_login must log in with a password (everyone else keeps trust), so
# tests can try a wrong or missing one. Added once, also to a cluster made by an older script.
hba="$dir/data/pg_hba.conf"
hba_changed=0
if ! grep -q "siwa_password_login" "$hba"; then
  { echo "local all +siwa_password_login scram-sha-256"
    echo "host  all +siwa_password_login 127.0.0.1/32 scram-sha-256"
    cat "$hba"; } > "$hba.new"
  mv "$hba.new" "$hba"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$hba"
  hba_changed=1
fi
started=0
if ! run_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
  started=1
  # A cluster left in DIR by an earlier run may have been made for another port: use the one asked for.
  sed -i "s/^port = .*/port = $port/" "$dir/data/postgresql.conf"
  run_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null
elif ! grep -q "^port = $port\$" "$dir/data/postgresql.conf"; then
  echo "pg-up: the cluster in $dir is already running on another port ($(grep '^port = ' "$dir/data/postgresql.conf")); stop it with scripts/pg-down.sh $dir or pick its port" >&2
  exit 69
fi
ready=no
for i in $(seq 1 50); do
  "$bin/pg_isready" -h "$dir" -p "$port" -q && { ready=yes; break; }
  sleep 0.2
done
[ "$ready" = yes ] || { echo "pg-up: PostgreSQL at $dir port $port is not accepting connections; see $dir/server.log" >&2; exit 69; }
[ "$hba_changed" = 1 ] && run_pg "$bin/pg_ctl" -D "$dir/data" reload >/dev/null
psql -h "$dir" -p "$port" -U postgres -d postgres -qtAc "SELECT 1 FROM pg_roles WHERE rolname='siwa_password_login'" | grep -q 1 \
  || psql -h "$dir" -p "$port" -U postgres -d postgres -qc "CREATE ROLE siwa_password_login NOLOGIN" >/dev/null
psql -h "$dir" -p "$port" -U postgres -d postgres -qtAc "SELECT 1 FROM pg_database WHERE datname='siwa'" | grep -q 1 \
  || psql -h "$dir" -p "$port" -U postgres -d postgres -qc "CREATE DATABASE siwa" >/dev/null
echo "export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=siwa"
# Whether this call started the cluster: a benchmark stops on exit only a cluster it started
# (scripts/pg-down.sh DIR "$PG_UP_STARTED"), unless KEEP_PG=1.
echo "PG_UP_STARTED=$started"
