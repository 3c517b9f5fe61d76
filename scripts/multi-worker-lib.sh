# Shared by scripts/rate-bench.sh, scale-bench.sh, priority-bench.sh, signin-bench.sh and pg-profile.sh (sourced, not run): a throwaway
# PostgreSQL cluster, a release build, a team key, the sandbox, seeded accounts, and one
# refresh-validation run drained by N worker processes at once, with its figures.
#
# Variables read: MW_PGDIR, MW_PGPORT, MW_DB (the cluster, its port, the database), MW_WORK (a
# scratch directory). After mw_run: MW_JOB, MW_WALL, MW_T0, MW_T1 (epoch seconds of the first
# worker's start and the last one's exit), and MW_FIGURES (one line of key=value figures).

. scripts/sandbox-env.sh   # HTTPS by default (SIWA_PLAIN_HTTP=1: plain http)
mw_sandbox_pid=
# The exit trap's part: stops the sandbox, and the cluster when mw_setup started it and KEEP_PG is
# not 1 (scripts/pg-down.sh), as the other benchmarks do.
mw_cleanup() {
  [ -n "$mw_sandbox_pid" ] && kill "$mw_sandbox_pid" 2>/dev/null
  wait 2>/dev/null || true
  [ -n "${MW_PGDIR:-}" ] && scripts/pg-down.sh "$MW_PGDIR" "${PG_UP_STARTED:-0}"
  true
}

# PostgreSQL, the release build and the team's key and token key.
mw_setup() {
  scripts/install-deps.sh
  eval "$(scripts/pg-up.sh "$MW_PGDIR" "$MW_PGPORT")"
  export PGHOST PGPORT PGUSER
  export PGDATABASE=$MW_DB
  unset DATABASE_URL
  psql -d postgres -qc "DROP DATABASE IF EXISTS $MW_DB WITH (FORCE)" -qc "CREATE DATABASE $MW_DB" >/dev/null
  if [ -n "${BIN:-}" ]; then bin=$BIN; else   # BIN: another build to measure (an A/B)
    swift build -c release 2>&1 | grep -E "error|warning:" || true
    bin=$(swift build -c release --show-bin-path)/siwa-jobs
  fi
  [ -x "$bin" ] || { echo "build failed" >&2; exit 1; }
  "$bin" migrate >/dev/null
  "$bin" keygen --out "$MW_WORK/AuthKey_SCALEKEY01.p8" >/dev/null
  "$bin" keygen --token-key --out "$MW_WORK/token.key" >/dev/null
  export SIWA_TEAM_ID=SCALETEAM1 SIWA_KEY_ID=SCALEKEY01 SIWA_CLIENT_ID=com.example.scale
  export SIWA_KEY_FILE="$MW_WORK/AuthKey_SCALEKEY01.p8" SIWA_TOKEN_KEY_FILE="$MW_WORK/token.key"
  export SIWA_LOG_FORMAT=json SIWA_LOG_LEVEL=${SIWA_LOG_LEVEL:-warning}
}

# Starts the sandbox with flags "$@" (id_tokens off: their RSA signing would dominate its CPU).
mw_sandbox() {
  [ -n "$mw_sandbox_pid" ] && { kill "$mw_sandbox_pid" 2>/dev/null; wait "$mw_sandbox_pid" 2>/dev/null || true; }
  "$bin" sandbox --port 0 --refresh-id-token off --threads 2 $SANDBOX_TLS_FLAGS "$@" \
    > "$MW_WORK/sandbox.out" 2> "$MW_WORK/sandbox.err" &
  mw_sandbox_pid=$!
  sandbox_env "$MW_WORK/sandbox.out" || { cat "$MW_WORK/sandbox.err" >&2; exit 1; }
  url=$SIWA_APPLE_BASE_URL
}

# Seeds $1 accounts of SIWA_CLIENT_ID (3% of them revoked in the sandbox's truth).
mw_seed() { "$bin" seed --accounts "$1" --revoked-fraction 0.03 "${@:2}" >/dev/null; }

# One validation of every account of SIWA_CLIENT_ID, drained by $1 worker processes at
# concurrency $2 each; the rest of the arguments go to every worker.
mw_run() {
  local n=$1 c=$2; shift 2
  psql -qtAc "UPDATE siwa.accounts SET token_checked_at = NULL, token_status = 'unknown'" >/dev/null
  psql -qtAc "VACUUM ANALYZE siwa.job_items" >/dev/null
  MW_JOB=$("$bin" enqueue refresh-validation | grep -o 'job [0-9]*' | head -n1 | cut -d' ' -f2)
  sandbox_curl -fsS -X POST -H "Content-Type: application/json" "$SIWA_APPLE_BASE_URL/__sandbox/reset-stats" >/dev/null
  local pg0 sb0 pids=() i
  pg0=$(python3 scripts/cpu-seconds.py --postgres "$MW_PGDIR/data")
  sb0=$(python3 scripts/cpu-seconds.py --pid "$mw_sandbox_pid")
  rm -f "$MW_WORK"/worker-*.out "$MW_WORK"/worker-*.log   # the CPU sum reads every worker-*.out: no stale runs
  MW_T0=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    "$bin" work --drain --stats --concurrency "$c" --worker-id "bench-$i" "$@" \
      > "$MW_WORK/worker-$i.out" 2> "$MW_WORK/worker-$i.log" &
    pids+=($!)
  done
  local codes=""
  for i in "${pids[@]}"; do wait "$i"; codes="$codes$?,"; done
  MW_T1=$(date +%s.%N)
  MW_WALL=$(python3 -c "print(f'{$MW_T1 - $MW_T0:.2f}')")
  local pg1 sb1 wcpu
  pg1=$(python3 scripts/cpu-seconds.py --postgres "$MW_PGDIR/data")
  sb1=$(python3 scripts/cpu-seconds.py --pid "$mw_sandbox_pid")
  wcpu=$(cat "$MW_WORK"/worker-*.out | python3 -c '
import re, sys
t = sys.stdin.read()
print("%.1f" % sum(float(x) for x in re.findall(r"cpu_(?:user|sys)_s=([0-9.]+)", t)))')
  local q
  q=$(psql -qtAF' ' -c "SELECT (SELECT count(*) FROM siwa.results WHERE job_id = $MW_JOB),
        (SELECT count(*) - count(DISTINCT item_id) FROM siwa.results WHERE job_id = $MW_JOB),
        (SELECT terminal FROM siwa.job_progress WHERE job_id = $MW_JOB),
        (SELECT items FROM siwa.job_progress WHERE job_id = $MW_JOB)")
  local match
  match=$("$bin" status --job "$MW_JOB" --sandbox "$SIWA_APPLE_BASE_URL" 2>/dev/null | grep -o 'MISMATCH\|MATCH' | tail -n1 || true)
  set -- $q
  MW_FIGURES="results=$1 duplicates=$2 terminal_pct=$(python3 -c "print(f'{100*$3/max(1,$4):.1f}')") ${match:-MISMATCH}"
  MW_FIGURES="$MW_FIGURES exit=${codes%,} cpu_s_workers=$wcpu cpu_s_sandbox=$(python3 -c "print(f'{$sb1-$sb0:.1f}')")"
  MW_FIGURES="$MW_FIGURES cpu_s_postgres=$(python3 -c "print(f'{$pg1-$pg0:.1f}')") cores=$(nproc)"
  MW_ITEMS=$1
  # Each worker's own closing counts.
  echo "job $MW_JOB ($n processes):" >> "$MW_WORK/summary.txt"
  for i in $(seq 1 "$n"); do
    grep -h '^worker:' "$MW_WORK/worker-$i.out" | sed "s/^/  bench-$i /" | cut -c1-160 >> "$MW_WORK/summary.txt" || true
  done
}
