#!/usr/bin/env bash
# Starts a throwaway PgBouncer (Debian's pgbouncer package) in TRANSACTION pooling mode in front of
# the cluster of scripts/pg-up.sh, for the tests and for trying the worker behind a pooler.
#
#   scripts/pgbouncer-up.sh DIR PORT PG_PORT [PG_HOST]
#
# Every database name is passed through to PostgreSQL at PG_HOST:PG_PORT (default host 127.0.0.1),
# so per-test databases work without listing them. Clients connect to 127.0.0.1:PORT (or the Unix
# socket in DIR) as any role named in DIR/userlist.txt (postgres), without a password
# (auth_type = trust); PgBouncer logs in to PostgreSQL as the same role, which pg-up.sh's cluster
# trusts on 127.0.0.1. PgBouncer refuses to run as root, so it runs as 'postgres'. Re-running
# reuses a PgBouncer already running from DIR (restarted if its configuration changed). Stop it
# with `kill "$(cat DIR/pgbouncer.pid)"`.
set -euo pipefail
dir=${1:?usage: pgbouncer-up.sh DIR PORT PG_PORT [PG_HOST]}
port=${2:?usage: pgbouncer-up.sh DIR PORT PG_PORT [PG_HOST]}
pg_port=${3:?usage: pgbouncer-up.sh DIR PORT PG_PORT [PG_HOST]}
pg_host=${4:-127.0.0.1}
bin=$(command -v pgbouncer || true)
[ -n "$bin" ] || bin=/usr/sbin/pgbouncer
[ -x "$bin" ] || { echo "pgbouncer-up: pgbouncer not found; run scripts/install-deps.sh" >&2; exit 69; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"

# ignore_startup_parameters: libpq sends none PgBouncer refuses; listed for clients that send it.
# server_reset_query is not used in transaction mode; session state must not be relied on (README:
# "Running many workers").
cat > "$dir/pgbouncer.ini.new" <<INI
[databases]
* = host=$pg_host port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
echo '"postgres" ""' > "$dir/userlist.txt"
running=no
if [ -f "$dir/pgbouncer.pid" ] && kill -0 "$(cat "$dir/pgbouncer.pid")" 2>/dev/null; then running=yes; fi
# A PgBouncer already running from DIR with this configuration is reused; with another one
# (e.g. another port, which a reload cannot change) it is restarted.
if [ "$running" = yes ] && ! cmp -s "$dir/pgbouncer.ini.new" "$dir/pgbouncer.ini"; then
  pid=$(cat "$dir/pgbouncer.pid")
  kill "$pid"
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  running=no
fi
mv "$dir/pgbouncer.ini.new" "$dir/pgbouncer.ini"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir/pgbouncer.ini" "$dir/userlist.txt"
if [ "$running" = no ]; then
  rm -f "$dir/pgbouncer.pid"
  as_postgres "$bin" -d -q "$dir/pgbouncer.ini"
fi

ready=no
for i in $(seq 1 50); do
  if psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -qtAc "SELECT 1" >/dev/null 2>&1; then ready=yes; break; fi
  sleep 0.2
done
[ "$ready" = yes ] || { echo "pgbouncer-up: PgBouncer on 127.0.0.1:$port does not reach PostgreSQL at $pg_host:$pg_port; see $dir/pgbouncer.log" >&2; exit 69; }
echo "export SIWA_PGBOUNCER_HOST=127.0.0.1 SIWA_PGBOUNCER_PORT=$port"
