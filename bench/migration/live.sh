#!/bin/bash
# The live cutover benchmark (make bench-migration, after run.sh): how long the application
# cannot write, from the cutover's approval to the moment the target may take its writes. A live
# Migration (clone --follow) of a source of BENCH_LIVE_ROWS rows driven by godwit-controller on
# the local cluster, an application writing (pgbench, BENCH_LIVE_RATE transactions a second)
# until the Migration is CutoverPending; then, per run:
#   Manual:    the writes stop, spec.cutover.approved is set (t0), and the script times
#              t0 -> phase CuttingOver -> CutoverCompleted=True (DrainVerified) -> Completed;
#   Automatic: the writes stop when the Migration is Streaming; the cutover starts by itself
#              once caught up: times phase CutoverPending (t0, when it shows) or CuttingOver ->
#              DrainVerified -> Completed.
# Each with Debian's pgcopydb (0.10) and, when tests/pgcopydb/install.sh put it in
# /opt/godwit/pgcopydb-0.17, with 0.17. Every run checks that the target holds every row.
# Goal (issue 16, reported, not asserted): approval -> DrainVerified <= 3 s. A run that does not
# complete within BENCH_LIVE_TIMEOUT is a result (to_drain_verified_s=none), not a failure of
# the script. One line per run:
#   live-cutover: pgcopydb=V mode=M rows=N written=W to_cutting_over_s=S to_drain_verified_s=S to_completed_s=S
# docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/migration/live.sh [BUILD]      BUILD holds the binaries of `make all` (default: build)
# Environment (all optional):
#   BENCH_LIVE_ROWS=200000   rows of the source's table
#   BENCH_LIVE_RATE=20       the application's transactions a second while it writes
#   BENCH_LIVE_ROUNDS=1      runs of each mode and version
#   BENCH_LIVE_TIMEOUT=120   seconds one run may take before it is reported as not completed
#   BENCH_LIVE_VERSIONS      the pgcopydb versions to run (default: 0.10, and 0.17 when installed)
#   BENCH_LIVE_MODES         the cutover modes to run (default: "Manual Automatic")
#   BENCH_KEEP=0             1: leave the work directory in /tmp
#   GODWIT_POLL_INTERVAL_MS, GODWIT_LAG_INTERVAL_MS, ...: reach the controller; unset, its
#                            defaults apply, as in a deployment
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
rows=${BENCH_LIVE_ROWS:-200000}
rate=${BENCH_LIVE_RATE:-20}
rounds=${BENCH_LIVE_ROUNDS:-1}
run_timeout=${BENCH_LIVE_TIMEOUT:-120}
PGBIN=/usr/lib/postgresql/15/bin
V017=/opt/godwit/pgcopydb-0.17/bin

die() { echo "bench: $*" >&2; exit 1; }
for v in rows rate rounds run_timeout; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
for c in pgcopydb kubectl psql; do
  command -v "$c" >/dev/null 2>&1 || die "$c is not installed: run 'make deps'"
done
[ -x "$PGBIN/pgbench" ] || die "pgbench is missing ($PGBIN): run 'make deps'"
for b in godwit-apiserver godwit-webhook godwit-jobrunner godwit-controller godwit-runner \
  godwit-certs godwit-yaml2json; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make BUILD=$build all'"
done

work=$(mktemp -d /tmp/godwit-bench-live-XXXXXX)
chmod 755 "$work"
cluster=$work/cluster
export KUBECONFIG=$cluster/kubeconfig GODWIT_BUILD=$build
src_up='' dst_up='' cluster_up='' bg=()
cleanup() {
  set +e
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${bg[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$cluster_up" ] && "$ROOT/tests/localcluster/down" --dir "$cluster" >/dev/null 2>&1
  [ -n "$src_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/src" >/dev/null 2>&1
  [ -n "$dst_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/dst" >/dev/null 2>&1
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "bench: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
src_sql() { bench_psql "$work/src" "$src_port" "$@"; }
dst_sql() { bench_psql "$work/dst" "$dst_port" "$@"; }

echo "godwit live cutover benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -sr)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- servers: a logical source, a target
src_port=$(bench_pg_up "$work/src" logical) || die "the source server did not start"
src_up=1
dst_port=$(bench_pg_up "$work/dst") || die "the target server did not start"
dst_up=1
src_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
dst_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
src_sql postgres -c "CREATE ROLE src_app LOGIN REPLICATION PASSWORD '$src_pw'" \
  -c "CREATE DATABASE live" -c "GRANT CREATE ON DATABASE live TO src_app"
# 15.20 and later refuse wal2json until it is listed (docs/dev/pgcopydb-observed.md)
if [ -n "$(src_sql postgres -Atc "SELECT 1 FROM pg_settings WHERE name = 'output_plugin_libraries'")" ]; then
  src_sql postgres -c "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding', 'wal2json'" \
    -c "SELECT pg_reload_conf()" >/dev/null
fi
src_sql live >"$work/load.log" 2>&1 <<EOF || { cat "$work/load.log" >&2; die "loading the source failed"; }
CREATE TABLE orders(id bigserial PRIMARY KEY, customer int NOT NULL, amount numeric(12,2) NOT NULL,
  note text, created_at timestamptz NOT NULL DEFAULT now());
INSERT INTO orders(customer, amount, note)
  SELECT g % 5000, (g % 99991) / 100.0, md5(g::text) FROM generate_series(1, $rows) g;
CREATE INDEX orders_customer_idx ON orders(customer);
GRANT SELECT ON ALL TABLES IN SCHEMA public TO src_app;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO src_app;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO src_app;
VACUUM ANALYZE;
EOF
dst_sql postgres -c "CREATE ROLE dst_app LOGIN PASSWORD '$dst_pw'"
cat >"$work/app.sql" <<'EOF'
INSERT INTO orders(customer, amount, note) VALUES (random() * 5000, random() * 1000, 'live');
EOF

# reset_target: an empty target database with the apply's rights; the source's leftovers of the
# previous run gone (the cleanup Job drops them; a failed run may leave them)
reset_target() {
  dst_sql postgres -c "DROP DATABASE IF EXISTS live WITH (FORCE)" -c "CREATE DATABASE live OWNER dst_app"
  dst_sql live -c "DO \$\$ DECLARE f regprocedure; BEGIN FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname LIKE 'pg\\_replication\\_origin\\_%' LOOP EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO dst_app', f); END LOOP; END \$\$" \
    -c "GRANT SET ON PARAMETER session_replication_role TO dst_app" >/dev/null
  src_sql live -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active" \
    -c "DROP SCHEMA IF EXISTS pgcopydb CASCADE" >/dev/null
}

# ---- the local cluster (with the 0.17 image when it is installed)
images=""
[ -x "$V017/pgcopydb" ] && images="ghcr.io/godwit-dev/pgcopydb:0.17=$V017"
t=$(now)
GODWIT_IMAGE_PATHS=$images "$ROOT/tests/localcluster/up" --dir "$cluster" --with-controller \
  --log-level warn >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "the local cluster did not start"; }
cluster_up=1
kubectl create secret generic src --from-literal=uri="postgres://src_app:$src_pw@127.0.0.1:$src_port/live" >/dev/null
kubectl create secret generic dst --from-literal=uri="postgres://dst_app:$dst_pw@127.0.0.1:$dst_port/live" >/dev/null
ctl_env=$(env | grep -E '^GODWIT_(PROBE|POLL|LAG)_INTERVAL_MS=' | tr '\n' ' ' || true)
echo "source: $rows rows; local cluster up in $(secs "$t" "$(now)") s; controller settings: ${ctl_env:-its defaults}"

# watch NAME FILE: "<time> <phase> <CutoverCompleted status>" on every change of the Migration
watch_start() {
  : >"$2"
  kubectl get migrations --watch --no-headers \
    -o 'custom-columns=N:.metadata.name,P:.status.phase,C:.status.conditions[?(@.type=="CutoverCompleted")].status' \
    2>/dev/null > >(while read -r n p c; do
      [ "$n" = "$1" ] && echo "$EPOCHREALTIME $p $c"
    done >>"$2") &
  bg+=($!)
}
watch_stop() {
  local p
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bg[@]}"; do wait "$p" 2>/dev/null || true; done
  bg=()
}
# first FILE PHASE [CC]: the time of the first line with that phase (and CutoverCompleted)
first() { awk -v p="$2" -v c="${3:-}" '$2 == p && (c == "" || $3 == c) { print $1; exit }' "$1"; }
first_cc() { awk '$3 == "True" { print $1; exit }' "$1"; }
# wait_for FILE AWK-CONDITION: until a line matches (or the run's timeout)
wait_for() {
  local i
  for ((i = 0; i < run_timeout * 10; i++)); do
    awk "$2 { f = 1 } END { exit !f }" "$1" && return 0
    awk '$2 == "Failed" { f = 1 } END { exit !f }' "$1" && return 1
    sleep 0.1
  done
  return 1
}

# run VERSION MODE N
run() {
  local version=$1 mode=$2 n=$3 name image="" t0 tc td tdone written before
  name=live-${version//./}-${mode,,}-$n
  [ "$version" = 0.17 ] && image="    image: ghcr.io/godwit-dev/pgcopydb:0.17"
  reset_target
  cat >"$work/$name.yaml" <<EOF
apiVersion: pgcopydb.io/v1
kind: Migration
metadata:
  name: $name
spec:
  source:
    connectionSecretRef: {name: src}
  target:
    connectionSecretRef: {name: dst}
  worker:
$image
    workDir: {size: 10Gi}
  follow:
    maxCatchupLag: 8Mi
  cutover:
    mode: $mode
EOF
  sed -i '/^$/d' "$work/$name.yaml"
  local tl=$work/$name.timeline app
  watch_start "$name" "$tl"
  sleep 1
  kubectl apply -f "$work/$name.yaml" >"$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; die "$name: apply failed"; }
  # the application writes once the slot exists (0.10 may lose a commit between its snapshot
  # and its slot: docs/dev/pgcopydb-observed.md)
  wait_for "$tl" '$2 == "Streaming" || $2 == "CutoverPending"' || die "$name: never Streaming"
  before=$(src_sql live -Atc "SELECT count(*) FROM orders")
  "$PGBIN/pgbench" -n -h "$work/src/sock" -p "$src_port" -U postgres -d live \
    -f "$work/app.sql" -R "$rate" -T "$run_timeout" >"$work/$name.pgbench" 2>&1 &
  app=$!
  if [ "$mode" = Manual ]; then
    wait_for "$tl" '$2 == "CutoverPending"' || die "$name: never CutoverPending"
    sleep 2 # streaming the application's writes
    kill -TERM "$app" 2>/dev/null || true # (INT is ignored in a script's background job)
    wait "$app" 2>/dev/null || true
    t0=$(now)
    kubectl patch migration "$name" --type merge -p '{"spec":{"cutover":{"approved":true}}}' >/dev/null
  else
    sleep 2
    kill -TERM "$app" 2>/dev/null || true # (INT is ignored in a script's background job)
    wait "$app" 2>/dev/null || true
  fi
  if ! wait_for "$tl" '$2 == "Completed"'; then
    # a result, not a broken benchmark: said, with where it stopped, and the next run goes on
    watch_stop
    kubectl get migration "$name" -o yaml >"$work/$name.status" 2>&1 || true
    echo "live-cutover: pgcopydb=$version mode=$mode rows=? written=? to_cutting_over_s=? to_drain_verified_s=none to_completed_s=none (not Completed within ${run_timeout} s; phase $(awk 'END { print $2 }' "$tl"))"
    stalled=$((stalled + 1))
    kubectl delete migration "$name" --wait=true --timeout=120s >/dev/null 2>&1 || true
    return 0
  fi
  sleep 0.3
  watch_stop
  if [ "$mode" = Automatic ]; then
    t0=$(first "$tl" CutoverPending)
    [ -n "$t0" ] || t0=$(first "$tl" CuttingOver)
  fi
  tc=$(first "$tl" CuttingOver)
  td=$(first_cc "$tl")
  tdone=$(first "$tl" Completed)
  written=$(src_sql live -Atc "SELECT count(*) FROM orders")
  [ "$written" -gt "$before" ] || { cat "$work/$name.pgbench" >&2; die "$name: the application wrote nothing"; }
  [ "$(dst_sql live -Atc "SELECT count(*) FROM orders")" = "$written" ] ||
    die "$name: the target has $(dst_sql live -Atc "SELECT count(*) FROM orders") rows, the source $written"
  echo "live-cutover: pgcopydb=$version mode=$mode rows=$written written=$((written - before)) to_cutting_over_s=$(secs "$t0" "$tc") to_drain_verified_s=$(secs "$t0" "$td") to_completed_s=$(secs "$t0" "$tdone")"
  kubectl delete migration "$name" --wait=true --timeout=60s >/dev/null 2>&1 || true
}

stalled=0
versions="0.10"
[ -n "$images" ] && versions="0.10 0.17"
versions=${BENCH_LIVE_VERSIONS:-$versions}
modes=${BENCH_LIVE_MODES:-Manual Automatic}
for v in $versions; do
  case $v in 0.10) ;; 0.17) [ -n "$images" ] || die "pgcopydb 0.17 is not installed (tests/pgcopydb/install.sh)" ;;
  *) die "BENCH_LIVE_VERSIONS: 0.10 or 0.17, got '$v'" ;; esac
done
for m in $modes; do
  case $m in Manual|Automatic) ;; *) die "BENCH_LIVE_MODES: Manual or Automatic, got '$m'" ;; esac
done
for r in $(seq 1 "$rounds"); do
  for version in $versions; do
    for mode in $modes; do
      run "$version" "$mode" "$r"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$stalled" = 0 ] || echo "$stalled run(s) did not complete: see docs/operations/benchmarks.md, \"Live cutover\""
echo "goal (issue 16): approval -> DrainVerified <= 3 s (Manual), reported, not asserted"
