#!/bin/bash
# The local demo (`make demo`): a live Migration driven by the real controller, end to end on
# this machine. It starts the local cluster (API server, webhook, job runner, controller; see
# docs/dev/localcluster.md) and two PostgreSQL 15 servers on loopback, loads a sample database
# on the source, applies a live Migration with kubectl, shows its phases advancing while rows
# keep arriving on the source, approves the cutover with kubectl patch, waits for Complete and
# shows that the target holds the same rows. Then a refused kubectl apply (the source is
# immutable). Everything it started is stopped and removed when it ends, also on Ctrl-C.
#
#   tests/demo/migration-demo.sh [BUILD]      # BUILD defaults to build
#
# When the Migration fails, the demo stops at once and prints the Migration's reason (exit 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export GODWIT_BUILD=$BUILD
WORK=$(mktemp -d /tmp/godwit-demo-XXXXXX)
chmod 755 "$WORK"
export KUBECONFIG=$WORK/cluster/kubeconfig
WATCH='' WRITER='' SRC_UP='' DST_UP=''

cleanup() {
  set +e
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
  [ -n "$WRITER" ] && kill "$WRITER" 2>/dev/null
  wait 2>/dev/null
  "$ROOT/tests/localcluster/down" --dir "$WORK/cluster" >/dev/null 2>&1
  [ -n "$SRC_UP" ] && "$ROOT/tests/pg/pgserver.sh" stop "$WORK/src"
  [ -n "$DST_UP" ] && "$ROOT/tests/pg/pgserver.sh" stop "$WORK/dst"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }
die() {
  echo "demo: $*" >&2
  kubectl get migration shop -o jsonpath='{range .status.conditions[?(@.type=="Failed")]}the Migration failed: {.reason}: {.message}{"\n"}{end}' >&2 2>/dev/null || true
  for f in controller jobrunner; do
    [ -s "$WORK/cluster/$f.log" ] && { echo "--- $f.log (last lines)" >&2; tail -n 20 "$WORK/cluster/$f.log" >&2; }
  done
  kubectl describe migration shop >&2 2>/dev/null || true
  exit 1
}

# A PostgreSQL server on a free loopback port (tries a few random ports).
pg_up() {
  local dir=$1 mode=${2:-} port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % 30000 ))
    rm -rf "$dir"
    if "$ROOT/tests/pg/pgserver.sh" start "$dir" "$port" $mode >/dev/null 2>"$WORK/pg.err"; then
      echo "$port"
      return 0
    fi
  done
  cat "$WORK/pg.err" >&2
  return 1
}
# Stops the demo at once, with the Migration's reason, when it has failed.
fail_fast() {
  [ "$(kubectl get migration shop -o jsonpath='{.status.phase}' 2>/dev/null)" != Failed ] ||
    die "the Migration failed; it will not go on"
}
# Waits for condition $1 of the Migration to be True, at most $2 seconds; stops at once when
# the Migration fails instead.
wait_cond() {
  local cond=$1 limit=$(( $2 * 5 )) i=0 out
  echo "(waiting for the condition $cond to become True, at most $2 s)"
  while :; do
    out=$(kubectl get migration shop -o jsonpath="{.status.phase}|{.status.conditions[?(@.type==\"$cond\")].status}" 2>/dev/null) || out=''
    case $out in
      *'|True') return 0 ;;
      'Failed|'*) die "the Migration failed while the demo waited for $cond" ;;
    esac
    i=$((i + 1))
    [ $i -lt $limit ] || die "$cond did not become True within $2 s"
    [ $((i % 50)) -ne 0 ] || echo "(still waiting for $cond after $((i / 5)) s; phase ${out%%|*})"
    sleep 0.2
  done
}
# psql as the superuser over a server's unix socket.
sql() {
  local dir=$1 port=$2 db=$3
  shift 3
  psql -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d "$db" "$@"
}

say "starting the local cluster: API server, godwit-webhook, job runner, godwit-controller"
# Short intervals, so the demo moves quickly (defaults: 5 s probe, 10 s lag, 5 s poll).
export GODWIT_PROBE_INTERVAL_MS=500 GODWIT_LAG_INTERVAL_MS=1000 GODWIT_POLL_INTERVAL_MS=1000
"$ROOT/tests/localcluster/up" --dir "$WORK/cluster" --with-controller --log-level warn --require-mounts \
  >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; die "the local cluster did not start"; }
kubectl version 2>/dev/null | sed -n 2p

say "starting two PostgreSQL 15 servers on loopback: the source (wal_level=logical) and the target"
SRC_PORT=$(pg_up "$WORK/src" logical) || die "the source server did not start"
SRC_UP=1
DST_PORT=$(pg_up "$WORK/dst") || die "the target server did not start"
DST_UP=1
echo "source on 127.0.0.1:$SRC_PORT, target on 127.0.0.1:$DST_PORT"

# PostgreSQL's 2026 point releases (15.20 here) let a slot use only the output plugins listed in
# output_plugin_libraries (pgoutput and test_decoding by default), and Debian's pgcopydb 0.10
# decodes with wal2json: the source's admin lists it (docs/api/migration.md, "Output plugin").
# A newer pgcopydb decodes with test_decoding and needs nothing; spec.superuserSecretRef lets
# the preflight do this itself.
# DEMO_SKIP_ADMIN_STEP=1 leaves the step out, to show what a user who skipped it sees.
if [ -z "${DEMO_SKIP_ADMIN_STEP:-}" ] &&
   sql "$WORK/src" "$SRC_PORT" postgres -tAc "SELECT 1 FROM pg_settings WHERE name = 'output_plugin_libraries'" | grep -q 1; then
  say "the source's admin allows wal2json, pgcopydb 0.10's output plugin (PostgreSQL $(sql "$WORK/src" "$SRC_PORT" postgres -tAc 'SHOW server_version' | cut -d' ' -f1) lists the plugins a slot may use)"
  run sql "$WORK/src" "$SRC_PORT" postgres -c "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding', 'wal2json'" -c "SELECT pg_reload_conf()"
  i=0 # the postmaster reloads asynchronously; a new session sees the list once it has
  until sql "$WORK/src" "$SRC_PORT" postgres -tAc "SHOW output_plugin_libraries" | grep -q wal2json; do
    i=$((i + 1))
    [ $i -lt 100 ] || die "the source did not reload its configuration"
    sleep 0.05
  done
fi

say "loading the sample database \"shop\" on the source (3 schemas, 200,000 orders, a sequence, a large object)"
SRC_PW=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
DST_PW=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
sql "$WORK/src" "$SRC_PORT" postgres <<EOF
CREATE ROLE src_app LOGIN REPLICATION PASSWORD '$SRC_PW';
CREATE DATABASE shop;
EOF
sql "$WORK/src" "$SRC_PORT" shop <<'EOF'
GRANT CREATE ON DATABASE shop TO src_app;
CREATE SCHEMA sales; CREATE SCHEMA audit;
CREATE TABLE public.customers(id int PRIMARY KEY, email text UNIQUE NOT NULL, name text);
INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'customer ' || g
  FROM generate_series(1, 1000) g;
CREATE SEQUENCE sales.invoice_seq; SELECT setval('sales.invoice_seq', 4242);
CREATE TABLE sales.orders(id bigint PRIMARY KEY,
  customer_id int NOT NULL REFERENCES public.customers(id), amount numeric(10,2), note text);
INSERT INTO sales.orders SELECT g, 1 + g % 1000, (g % 9973) / 100.0, 'n' || g
  FROM generate_series(1, 200000) g;
CREATE INDEX orders_customer_idx ON sales.orders(customer_id);
CREATE TABLE audit.log(id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), msg text);
INSERT INTO audit.log(msg) SELECT 'event ' || g FROM generate_series(1, 100) g;
SELECT lo_from_bytea(0, 'godwit large object') \gset
GRANT SELECT ON LARGE OBJECT :lo_from_bytea TO src_app;
GRANT USAGE ON SCHEMA sales, audit TO src_app;
GRANT SELECT ON ALL TABLES IN SCHEMA public, sales, audit TO src_app;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA public, sales, audit TO src_app;
ANALYZE;
EOF
sql "$WORK/dst" "$DST_PORT" postgres <<EOF
CREATE ROLE dst_app LOGIN PASSWORD '$DST_PW';
CREATE DATABASE shop OWNER dst_app;
EOF
# The follow prerequisites on the target: replication origins and session_replication_role.
sql "$WORK/dst" "$DST_PORT" shop <<'EOF'
DO $$ DECLARE f regprocedure; BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.proname LIKE 'pg\_replication\_origin\_%' LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO dst_app', f);
  END LOOP; END $$;
GRANT SET ON PARAMETER session_replication_role TO dst_app;
EOF
sql "$WORK/src" "$SRC_PORT" shop -c "SELECT 'source' AS side, (SELECT count(*) FROM sales.orders) AS orders, pg_size_pretty(pg_database_size('shop')) AS size"

say "the credentials go into Secrets (never into the Migration, a Job argument, a log or an Event)"
run kubectl create secret generic shop-src \
  --from-literal=uri="postgres://src_app:$SRC_PW@127.0.0.1:$SRC_PORT/shop" -o name
run kubectl create secret generic shop-dst \
  --from-literal=uri="postgres://dst_app:$DST_PW@127.0.0.1:$DST_PORT/shop" -o name

cat >"$WORK/shop.yaml" <<'EOF'
apiVersion: pgcopydb.io/v1
kind: Migration
metadata:
  name: shop
spec:
  source:
    connectionSecretRef: {name: shop-src}
  target:
    connectionSecretRef: {name: shop-dst}
  clone:
    tableJobs: 4
    indexJobs: 2
  follow:
    maxCatchupLag: 1Mi
  cutover:
    mode: Manual
  worker:
    workDir: {size: 1Gi}
EOF
say "applying a live Migration (clone, then follow the source with logical replication; Manual cutover)"
cat "$WORK/shop.yaml"
run kubectl apply -f "$WORK/shop.yaml"

say "the phases, as kubectl get -w shows them (an application writes to the source throughout; the copy takes about 20 s)"
kubectl get migration shop -w &
WATCH=$!

# Rows keep arriving on the source while it is copied and followed, from the moment the
# replication slot exists: pgcopydb 0.10 exports its snapshot before it creates the slot, and a
# transaction committed in between would be in neither (the verify Job would then refuse the
# cutover, DrainIncomplete; docs/api/migration.md, "Known limits").
i=0
until [ "$(sql "$WORK/src" "$SRC_PORT" postgres -tAc "SELECT count(*) FROM pg_replication_slots WHERE NOT temporary")" -ge 1 ]; do
  i=$((i + 1))
  [ $i -lt 1200 ] || die "the replication slot never appeared on the source"
  [ $((i % 5)) -ne 0 ] || fail_fast
  sleep 0.1
done
( i=0
  while :; do
    i=$((i + 1))
    sql "$WORK/src" "$SRC_PORT" shop -c "INSERT INTO sales.orders SELECT max(id) + 1, 1 + $i % 1000, 9.99, 'live $i' FROM sales.orders; INSERT INTO audit.log(msg) VALUES ('live $i')" >/dev/null 2>&1 || true
    sleep 0.2
  done ) &
WRITER=$!

wait_cond CaughtUp 240
sleep 1

say "caught up: the Migration waits for a person to approve the cutover"
kubectl get migration shop -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
echo
say "the application stops writing; approving the cutover (the webhook records who approved)"
kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null || true
WRITER=''
run kubectl patch migration shop --type merge -p '{"spec":{"cutover":{"approved":true}}}'
wait_cond Complete 240
sleep 1
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null || true
WATCH=''

say "Complete"
kubectl get migration shop -o jsonpath='approved by {.spec.cutover.approvedBy}; cutover LSN {.status.cutoverLSN}{"\n"}'
kubectl get migration shop -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}{"\n"}{end}'
echo
run kubectl describe migration shop | sed -n '/^Events:/,$p'

say "the same rows on both sides"
q="SELECT (SELECT count(*) FROM sales.orders) AS orders, (SELECT count(*) FROM audit.log) AS audit_log, (SELECT md5(string_agg(id::text || amount::text || note, ',' ORDER BY id)) FROM sales.orders) AS orders_md5, (SELECT last_value FROM sales.invoice_seq) AS invoice_seq"
src=$(sql "$WORK/src" "$SRC_PORT" shop -tAc "$q")
dst=$(sql "$WORK/dst" "$DST_PORT" shop -tAc "$q")
echo "source: $src"
echo "target: $dst"
[ "$src" = "$dst" ] || die "the target differs from the source"

say "a change of the source is refused before it persists (the source is immutable)"
sed 's/name: shop-src}/name: other-db}/' "$WORK/shop.yaml" >"$WORK/shop-moved.yaml"
if kubectl apply -f "$WORK/shop-moved.yaml"; then
  die "the change of the source was admitted"
fi

say "done: the demo stops everything it started"
