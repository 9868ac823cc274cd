#!/bin/sh
# pgserver.sh: a throwaway PostgreSQL 15 server on loopback, for trying things by hand (the
# observations in docs/dev/pgcopydb-observed.md were made with it). The C tests use
# tests/pg/pgfixture.c, which sets the server up the same way.
#
#   tests/pg/pgserver.sh start DIR PORT [logical]   # superuser "postgres", password "postgres"
#   tests/pg/pgserver.sh stop DIR
#
# PG_MAX_CONNECTIONS (optional) sets max_connections (default: PostgreSQL's, 100).
#
# As root, initdb and postgres run as the unprivileged system user godwit-pg (initdb refuses
# root), created on first use. Local socket connections are trusted (psql -h DIR/sock -U postgres),
# TCP ones need a password (scram-sha-256).
set -eu
BIN=/usr/lib/postgresql/15/bin
PGUSER_OS=godwit-pg

as_pg() {
  if [ "$(id -u)" = 0 ]; then su -s /bin/sh "$PGUSER_OS" -c "$*"; else sh -c "$*"; fi
}

case "${1:-}" in
start)
  dir=$2 port=$3 mode=${4:-}
  if [ "$(id -u)" = 0 ] && ! id "$PGUSER_OS" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$PGUSER_OS" 2>/dev/null || id "$PGUSER_OS" >/dev/null
  fi
  mkdir -p "$dir/sock"
  [ "$(id -u)" = 0 ] && chown -R "$PGUSER_OS" "$dir"
  echo postgres >"$dir/pwfile"
  as_pg "$BIN/initdb -D '$dir/data' -U postgres --pwfile='$dir/pwfile' --no-sync -E UTF8 \
    --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >'$dir/initdb.log'"
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
dynamic_shared_memory_type = mmap
EOF
  if [ -n "${PG_MAX_CONNECTIONS:-}" ]; then
    echo "max_connections = $PG_MAX_CONNECTIONS" >>"$dir/data/postgresql.conf"
  fi
  if [ "$mode" = logical ]; then
    printf "wal_level = logical\nmax_replication_slots = 10\nmax_wal_senders = 10\n" \
      >>"$dir/data/postgresql.conf"
  fi
  as_pg "$BIN/pg_ctl -D '$dir/data' -l '$dir/server.log' -w start >/dev/null"
  echo "postgres://postgres:postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  as_pg "$BIN/pg_ctl -D '$2/data' -m fast -w stop >/dev/null" || true
  ;;
*)
  echo "usage: $0 start DIR PORT [logical] | stop DIR" >&2
  exit 2
  ;;
esac
