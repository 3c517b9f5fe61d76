#!/usr/bin/env bash
# The 100 MB hand-off file check (too slow for the test suite in a debug build): generates a
# ~100 MB transfer CSV (about 1.6 million rows), loads it with `siwa-jobs transfer import-csv`,
# and prints wall time and peak RSS (a streamed load stays far below the file size). Then loads
# the same file with its first row duplicated at the end and checks that it is refused naming both
# line numbers and leaves nothing behind.
#
#   scripts/transfer-100mb.sh            # uses .build/release/siwa-jobs if present, else builds debug
#   BIN=.build/debug/siwa-jobs scripts/transfer-100mb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/pg-up.sh "${SIWA_PG_DIR:-/tmp/siwa-pg}" "${SIWA_PG_PORT:-54329}")"
export PGHOST PGPORT PGUSER
unset DATABASE_URL
bin=${BIN:-.build/release/siwa-jobs}
[ -x "$bin" ] || { swift build --product siwa-jobs >/dev/null; bin=.build/debug/siwa-jobs; }
db=siwa_100mb_$$
work=$(mktemp -d)
trap 'dropdb --if-exists "$db" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
createdb "$db"
export PGDATABASE=$db
"$bin" migrate >/dev/null
python3 - "$work/handoff.csv" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    f.write('external_user_id,transfer_sub\n')
    i = n = 0
    while n < 100 * 1024 * 1024:
        i += 1
        line = 'app-user-%010d,%06d.%032x.%04d\n' % (i, i % 1000000, i * 2654435761 % (1 << 128), i % 10000)
        f.write(line)
        n += len(line)
print('generated %d rows, %d bytes' % (i, n + 31))
PY
day=$(date -u +%F)
echo "== load (valid file)"
/usr/bin/time -f "wall_s=%e peak_rss_kb=%M" "$bin" transfer import-csv "$work/handoff.csv" \
  --team-id TEAMB67890 --client-id com.example.app --transfer-date "$day"
echo "== load (first row duplicated at the end: must be refused, nothing left)"
cp "$work/handoff.csv" "$work/bad.csv"
sed -n 2p "$work/handoff.csv" >> "$work/bad.csv"
if "$bin" transfer import-csv "$work/bad.csv" --team-id TEAMB67890 --client-id com.example.app --transfer-date "$day"; then
  echo "FAIL: a bad file was accepted" >&2; exit 1
fi
left=$(psql -Atc "SELECT count(*) FROM siwa.transfer_import_rows WHERE import_id <> 1")
[ "$left" = 0 ] || { echo "FAIL: $left rows left behind" >&2; exit 1; }
echo "OK: refused, nothing left behind"
