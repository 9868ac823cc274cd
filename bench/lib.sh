# bench/lib.sh: what the benchmark scripts share (sourced by bench/*/run.sh after they set ROOT
# and work): clocks, medians, and PostgreSQL 15 servers on free loopback ports
# (tests/pg/pgserver.sh: initdb, pg_ctl, fsync off; as root under the system user godwit-pg).

now() { echo "$EPOCHREALTIME"; }
# secs A B: B - A, two decimals
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", b - a }'; }
# median FILE [DECIMALS]: of the numbers in FILE, one per line (2 decimals for an even count)
median() {
  sort -n "$1" | awk -v d="${2:-2}" '{ v[NR] = $1 }
    END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.*f\n", d, (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# bench_pg_up DIR [logical]: a server in DIR on a free port, printed; its errors in
# $work/pg.err. logical: wal_level = logical. PG_MAX_CONNECTIONS in the environment reaches
# pgserver.sh.
bench_pg_up() {
  local dir=$1 mode=${2:-} port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 30000))
    port_free "$port" || continue
    rm -rf "$dir"
    if "$ROOT/tests/pg/pgserver.sh" start "$dir" "$port" $mode >/dev/null 2>"$work/pg.err"; then
      echo "$port"
      return 0
    fi
    "$ROOT/tests/pg/pgserver.sh" stop "$dir" >/dev/null 2>&1 || true
  done
  cat "$work/pg.err" >&2
  return 1
}
# bench_psql DIR PORT DB [psql args...]: as the superuser over the server's unix socket
bench_psql() {
  local dir=$1 port=$2 db=$3
  shift 3
  PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" \
    -p "$port" -U postgres -d "$db" "$@"
}
