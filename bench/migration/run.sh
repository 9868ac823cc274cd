#!/bin/bash
# The migration benchmark (make bench-migration, and make bench after the webhook's): the wall
# time of a clone-only Migration driven by godwit-controller on the local cluster, from
# `kubectl apply` to condition Complete (preflight Job, worker Job running pgcopydb, catalog Job,
# status), side by side with bare `pgcopydb clone` given the same options, on the same data
# (a few hundred MB on one PostgreSQL 15 server, copied into another), alternating the two
# BENCH_ROUNDS times; reports the medians and their ratio (goal: operator/bare <= 1.05). Then the
# cost of one probe sample (controller/migration/probe.c: Secret read, SHA-256 of the URI, the
# pg_stat_activity query on the session kept from the previous sample, a login only the first
# time) next to a connect + SELECT 1 and to the sample as it was with a login each time (Secret
# read, connect, the query, close) (bench/migration/probe.c), on the loaded target while a clone
# runs and while it is idle (goal: <= 10 ms a sample).
# docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/migration/run.sh [BUILD]      BUILD holds the binaries of `make all` and
#                                       godwit-bench-probe (default: build)
# Environment (all optional):
#   BENCH_MB=300           approximate size of the source database (tables and indexes), MB
#   BENCH_ROUNDS=2         rounds; each runs bare pgcopydb and the operator once, in alternating
#                          order (bare first in odd rounds); the medians are reported
#   BENCH_TABLE_JOBS=4     spec.clone.tableJobs and --table-jobs (the controller's default)
#   BENCH_INDEX_JOBS=4     spec.clone.indexJobs and --index-jobs (the controller's default)
#   BENCH_PROBE_SAMPLES=500  probe samples of each kind on the idle target
#   BENCH_PROBE_UNDER_LOAD=1 also sample (every 100 ms) during one extra, untimed bare clone
#   BENCH_TIMEOUT=1800     seconds one side of a round may take
#   BENCH_KEEP=0           1: leave the work directory (logs, the cluster's) in /tmp
#   BENCH_LOG_LEVEL=warn   log level of the local cluster's programs (debug: every reconcile
#                          and API request, for finding where time goes; it costs a little)
#   GODWIT_PROBE_INTERVAL_MS, GODWIT_POLL_INTERVAL_MS, ...: reach the controller (its flags'
#                          environment names, see godwit-controller --help); unset, the
#                          controller's defaults apply, as in a deployment
# Runs as any user; as root, PostgreSQL runs as the system user godwit-pg (tests/pg/pgserver.sh).
# Everything it starts is stopped, and its directory removed, on exit (also on Ctrl-C).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
mb=${BENCH_MB:-300}
rounds=${BENCH_ROUNDS:-2}
tjobs=${BENCH_TABLE_JOBS:-4}
ijobs=${BENCH_INDEX_JOBS:-4}
samples=${BENCH_PROBE_SAMPLES:-500}
under_load=${BENCH_PROBE_UNDER_LOAD:-1}
side_timeout=${BENCH_TIMEOUT:-1800}
PGBIN=/usr/lib/postgresql/15/bin
APPNAME=godwit-bench # PGAPPNAME of the bare clone (the worker's is godwit-<uid8>)

die() { echo "bench: $*" >&2; exit 1; }

for v in mb rounds tjobs ijobs samples side_timeout; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
command -v pgcopydb >/dev/null 2>&1 || die "pgcopydb is not installed: run 'make deps'"
command -v kubectl >/dev/null 2>&1 || die "kubectl is not installed: run 'make deps'"
command -v psql >/dev/null 2>&1 || die "psql is not installed: run 'make deps'"
[ -x "$PGBIN/initdb" ] || die "PostgreSQL 15 is not installed ($PGBIN): run 'make deps'"
for b in godwit-apiserver godwit-webhook godwit-jobrunner godwit-controller godwit-runner \
  godwit-certs godwit-yaml2json godwit-bench-probe; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make bench-migration' (or make BUILD=$build all $build/godwit-bench-probe)"
done

work=$(mktemp -d /tmp/godwit-bench-mig-XXXXXX)
chmod 755 "$work" # the PostgreSQL servers run as godwit-pg when we are root
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
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    echo "bench: kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shared: now, secs, median, port_free, bench_pg_up, bench_psql
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
# ---- PostgreSQL: two servers on free loopback ports
pg_up() { bench_pg_up "$@"; }
# sql DIR PORT DB [psql args...]: as the superuser over the server's unix socket
sql() { bench_psql "$@"; }
src_sql() { sql "$work/src" "$src_port" "$@"; }
dst_sql() { sql "$work/dst" "$dst_port" "$@"; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "godwit migration benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $(uname -sr)"
echo "$(pgcopydb --version 2>&1 | grep -m1 -o 'pgcopydb.*' || echo pgcopydb), $("$PGBIN/postgres" --version), kubectl $(kubectl version --client 2>/dev/null | awk '/Client Version/ { print $3 }')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ exit !($1 > 0.5) }' /proc/loadavg &&
  echo "bench: the machine is not idle (load average above 0.5): wall times will be noisy" >&2

t=$(now)
src_port=$(pg_up "$work/src") || die "the source server did not start"
src_up=1
dst_port=$(pg_up "$work/dst") || die "the target server did not start"
dst_up=1

# ---- the data: four tables of different shapes, their indexes and a foreign key, about
# BENCH_MB MB in all (rows per MB measured on PostgreSQL 15; the real size is printed)
src_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
dst_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
src_sql postgres -c "CREATE ROLE src_app LOGIN PASSWORD '$src_pw'" -c "CREATE DATABASE bench"
dst_sql postgres -c "CREATE ROLE dst_app LOGIN PASSWORD '$dst_pw'"
customers=$((mb * 510)) orders=$((mb * 2040)) items=$((mb * 3650)) events=$((mb * 1240))
src_sql bench >"$work/load.log" 2>&1 <<EOF || { cat "$work/load.log" >&2; die "loading the source failed"; }
CREATE TABLE customers(id int PRIMARY KEY, email text NOT NULL UNIQUE, name text NOT NULL,
  country char(2) NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO customers SELECT g, 'customer' || g || '@example.com', 'Customer ' || md5(g::text),
  chr(65 + g % 26) || chr(65 + g % 7), '2020-01-01'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, $customers) g;
CREATE TABLE orders(id bigint PRIMARY KEY, customer_id int NOT NULL REFERENCES customers(id),
  status text NOT NULL, amount numeric(12,2) NOT NULL, created_at timestamptz NOT NULL,
  note text);
INSERT INTO orders SELECT g, 1 + g % $customers, (ARRAY['new','paid','shipped','done'])[1 + g % 4],
  (g % 99991) / 100.0, '2021-01-01'::timestamptz + g * interval '10 seconds',
  CASE WHEN g % 3 = 0 THEN md5(g::text) END
  FROM generate_series(1, $orders) g;
CREATE INDEX orders_customer_idx ON orders(customer_id);
CREATE INDEX orders_created_idx ON orders(created_at);
CREATE TABLE order_items(order_id bigint NOT NULL, line int NOT NULL, sku text NOT NULL,
  qty int NOT NULL, price numeric(10,2) NOT NULL, PRIMARY KEY (order_id, line));
INSERT INTO order_items SELECT 1 + g / 2, g % 2, 'SKU-' || (g % 50000), 1 + g % 5,
  (g % 9973) / 100.0 FROM generate_series(0, $items - 1) g;
CREATE INDEX order_items_sku_idx ON order_items(sku);
CREATE TABLE events(id bigserial PRIMARY KEY, at timestamptz NOT NULL, kind smallint NOT NULL,
  payload text NOT NULL);
INSERT INTO events(at, kind, payload) SELECT '2022-01-01'::timestamptz + g * interval '1 second',
  g % 17, repeat(md5(g::text), 3) FROM generate_series(1, $events) g;
CREATE INDEX events_at_idx ON events(at);
GRANT SELECT ON ALL TABLES IN SCHEMA public TO src_app;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO src_app;
VACUUM (FREEZE, ANALYZE);
CHECKPOINT;
EOF
src_bytes=$(src_sql bench -Atc "SELECT pg_database_size('bench')")
src_rows=$(src_sql bench -Atc "SELECT (SELECT count(*) FROM customers) + (SELECT count(*) FROM orders) + (SELECT count(*) FROM order_items) + (SELECT count(*) FROM events)")
src_uri="postgres://src_app:$src_pw@127.0.0.1:$src_port/bench"
dst_uri="postgres://dst_app:$dst_pw@127.0.0.1:$dst_port/bench"
echo "source: 4 tables, $src_rows rows, 8 indexes, 1 foreign key: $(awk -v b="$src_bytes" 'BEGIN { printf "%.0f", b / 1048576 }') MB (pg_database_size); servers up and loaded in $(secs "$t" "$(now)") s"

# reset_target: an empty target database owned by dst_app, both servers checkpointed and the
# page cache's dirty pages written, so that no run pays for the previous one's writes
reset_target() {
  dst_sql postgres -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" \
    -c "CREATE DATABASE bench OWNER dst_app" -c CHECKPOINT
  src_sql postgres -c CHECKPOINT
  sync
}

# check_target: the target holds every row of the source (the counts are cheap next to a copy)
check_target() {
  local n
  n=$(dst_sql bench -Atc "SELECT (SELECT count(*) FROM customers) + (SELECT count(*) FROM orders) + (SELECT count(*) FROM order_items) + (SELECT count(*) FROM events)") ||
    die "$1: cannot count the target's rows"
  [ "$n" = "$src_rows" ] || die "$1: the target has $n rows, the source $src_rows"
}

# ---- the bare clone: the worker's options (controller/migration/worker_args.c, attempt 1,
# clone-only, no extensions listed, no filters), credentials through the environment as the
# worker gets them
bare_args=(clone --dir WORKDIR --table-jobs "$tjobs" --index-jobs "$ijobs" --no-owner --no-acl
  --skip-extensions)
bare_run() { # LOG: one bare clone into the empty target
  local d=$work/bare
  rm -rf "$d"
  mkdir -p "$d"
  PGCOPYDB_SOURCE_PGURI=$src_uri PGCOPYDB_TARGET_PGURI=$dst_uri PGAPPNAME=$APPNAME \
    timeout "$side_timeout" pgcopydb "${bare_args[@]/WORKDIR/$d/work}" >"$1" 2>&1
}

# ---- the local cluster: API server, webhook, job runner, controller
t=$(now)
"$ROOT/tests/localcluster/up" --dir "$cluster" --with-controller --log-level "${BENCH_LOG_LEVEL:-warn}" \
  >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "the local cluster did not start"; }
cluster_up=1
kubectl create secret generic src --from-literal=uri="$src_uri" >/dev/null
kubectl create secret generic dst --from-literal=uri="$dst_uri" >/dev/null
ctl_env=$(env | grep -E '^GODWIT_(PROBE|POLL|LAG)_INTERVAL_MS=|^GODWIT_(STEP_ATTEMPTS|DB_TIMEOUT|WORKERS)=' | tr '\n' ' ' || true)
echo "local cluster up in $(secs "$t" "$(now)") s; controller settings from the environment: ${ctl_env:-none (its defaults: probe and poll intervals 5000 ms)}"

# the controller's own Kubernetes client: requests made and time spent waiting for its
# client-side rate limiter (shared/kube: 20 requests/s, burst 30), from its /metrics
ctl_port=$(awk -F= '$1 == "controller" { print $2 }' "$cluster/ports")
# The controller's API requests by verb and code, one "verb/code count" a line.
ctl_requests() {
  curl -sf "http://127.0.0.1:$ctl_port/metrics" |
    sed -n 's/^godwit_kube_requests_total{verb="\([^"]*\)",code="\([^"]*\)"} \([0-9]*\)$/\1\/\2 \3/p'
}
# requests_diff BEFORE AFTER: "verb/code n" for what grew
requests_diff() {
  awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if(d > 0) printf "%s %d, ", $1, d }' "$1" "$2" |
    sed 's/, $//'
}
ctl_metrics() {
  curl -sf "http://127.0.0.1:$ctl_port/metrics" | awk '
    /^godwit_kube_ratelimiter_wait_seconds_total / { w = $2 }
    /^godwit_kube_request_duration_seconds_count/ { n += $2 }
    END { print n + 0, w + 0 }'
}

# timeline NAME FILE: timestamped watch lines of the Migration's phase and its Jobs (two
# kubectl watches; $! is kubectl's pid, the timestamping loop ends with its output)
timeline_start() {
  local name=$1 file=$2
  : >"$file"
  rm -f "$work/wait.pid" "$work/failed"
  # phase Failed: stop the `kubectl wait` for Complete (its pid in wait.pid)
  kubectl get migrations --watch --no-headers -o custom-columns=K:.kind,N:.metadata.name,P:.status.phase \
    2>/dev/null > >(while IFS= read -r l; do
      l=${l//  / }; l=${l//  / }; l=${l//  / }; l=${l/#Migration/M}
      echo "$EPOCHREALTIME $l"
      if [[ $l =~ ^M\ +$name\ +Failed ]]; then
        touch "$work/failed"
        [ -s "$work/wait.pid" ] && kill "$(cat "$work/wait.pid")" 2>/dev/null
      fi
    done >>"$file") &
  bg+=($!)
  kubectl get jobs -l "godwit.dev/migration=$name" --watch --no-headers \
    -o custom-columns=K:.kind,N:.metadata.name,A:.status.active,S:.status.succeeded,F:.status.failed \
    2>/dev/null > >(while IFS= read -r l; do
      echo "$EPOCHREALTIME ${l/#Job/J} $(ctl_metrics)" # + the controller's requests, wait
    done >>"$file") &
  bg+=($!)
  sleep 1 # both watches are established before the apply
}
timeline_stop() {
  sleep 0.3 # the last events
  local p
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bg[@]}"; do wait "$p" 2>/dev/null || true; done
  bg=()
}

# operator_run NAME LOG: apply the Migration, wait for Complete (the timeline's watch stops the
# wait when the phase turns Failed); the caller times it
operator_run() {
  local name=$1 log=$2 w rc=0
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
  clone:
    tableJobs: $tjobs
    indexJobs: $ijobs
  worker:
    workDir: {size: 10Gi}
EOF
  kubectl apply -f "$work/$name.yaml" >"$log" 2>&1 || return 1
  kubectl wait --for=condition=Complete "migration/$name" --timeout="${side_timeout}s" >>"$log" 2>&1 &
  w=$!
  echo "$w" >"$work/wait.pid"
  [ -e "$work/failed" ] && kill "$w" 2>/dev/null
  wait "$w" || rc=$?
  [ -e "$work/failed" ] && return 1
  return "$rc"
}

# explain T0 TIMELINE WAIT0 WAIT1: where the operator's time went, from the watch lines (seconds
# after the apply at T0; WAIT0/WAIT1: the controller's rate-limiter seconds at T0 and at the end).
# Prints two human lines and "SPLIT worker_s before_s after_s rl_before_s rl_after_s".
explain() {
  awk -v t0="$1" -v w0="$3" -v w1="$4" '
    $2 == "J" {
      n = $3; sub(/-[0-9]+$/, "", n); sub(/^.*-/, "", n)  # preflight, worker, catalog
      if (!(n in seen)) { seen[n] = $1; seen_w[n] = $8 }
      if ($5 ~ /^[1-9]/ && !(n in done)) { done[n] = $1; done_w[n] = $8 }
    }
    $2 == "M" && $4 != "<none>" && !($4 in phase) { phase[$4] = $1 }
    function at(t) { return t == "" ? "?" : sprintf("%.2f", t - t0) }
    END {
      printf "      s after the apply: Migration created %s, preflight Job %s-%s, Cloning %s, worker Job %s-%s, catalog Job %s-%s, Completed %s\n",
        at(phase["Pending"]), at(seen["preflight"]), at(done["preflight"]), at(phase["Cloning"]),
        at(seen["worker"]), at(done["worker"]), at(seen["catalog"]), at(done["catalog"]),
        at(phase["Completed"])
      if (seen["worker"] == "" || done["worker"] == "" || phase["Completed"] == "") exit
      before = seen["worker"] - t0; worker = done["worker"] - seen["worker"]
      after = phase["Completed"] - done["worker"]
      rb = seen_w["worker"] - w0; ra = w1 - done_w["worker"]
      printf "      outside the worker Job: %.2f s before it, %.2f s after it; the controller waited for its rate limiter %.2f s of those (%.2f before, %.2f after)\n",
        before, after, rb + ra, rb, ra
      printf "SPLIT %.3f %.3f %.3f %.3f %.3f\n", worker, before, after, rb, ra
    }' "$2"
}

# The worker's command line must be the bare one: pgcopydb's arguments (the worker Job runs
# them through a small sh wrapper, controller/migration/worker.c), --dir aside.
check_args() {
  local name=$1 got want
  got=$(kubectl get job "$name-worker-1" -o jsonpath='{range .spec.template.spec.containers[0].command[*]}{@}{"\n"}{end}{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' |
    awk '$0 == "clone" { on = 1 } on' | tr '\n' ' ' | sed -E 's/--dir [^ ]+/--dir DIR/; s/ $//')
  want=$(echo "${bare_args[*]}" | sed -E 's/--dir [^ ]+/--dir DIR/')
  [ "$got" = "$want" ] || die "the worker ran pgcopydb '$got', the bare clone '$want': not like for like"
}

# pgc_total LOG: the "Total Wall Clock Duration" pgcopydb prints at the end, in seconds
pgc_total() {
  awk '/Total Wall Clock Duration/ {
      d = ""; t = 0; v = ""; frac = 0
      for (i = 5; i <= NF && d == ""; i++) if ($i ~ /^[0-9]+(h|ms|m|s)/) d = $i
      for (i = 1; i <= length(d); i++) {
        c = substr(d, i, 1)
        if (c ~ /[0-9]/) { v = v c; continue }
        if (c == "h") t += v * 3600
        else if (c == "m" && substr(d, i + 1, 1) == "s") { t += v / 1000; i++ }
        else if (c == "m") t += v * 60
        else if (c == "s") { t += v; frac = 1 }
        v = ""
      }
      if (v != "") t += (frac ? v / 1000 : v)   # "2s481": 481 ms after the seconds
      printf "%.2f\n", t; found = 1
    }
    END { if (!found) print "?" }' "$1"
}

# ---- the rounds
echo
echo "rounds: $rounds, alternating (odd rounds bare first); pgcopydb ${bare_args[*]/WORKDIR/DIR}"
: >"$work/bare.times"
: >"$work/op.times"
: >"$work/split.times"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="bare operator"; else order="operator bare"; fi
  for side in $order; do
    reset_target
    if [ "$side" = bare ]; then
      t0=$(now)
      bare_run "$work/bare-$r.log" || { tail -n 20 "$work/bare-$r.log" >&2; die "round $r: bare pgcopydb clone failed"; }
      t1=$(now)
      check_target "round $r, bare"
      secs "$t0" "$t1" >>"$work/bare.times"
      echo "  round $r: bare pgcopydb clone   $(secs "$t0" "$t1") s (pgcopydb's own total: $(pgc_total "$work/bare-$r.log") s)"
    else
      name=bench-$r
      timeline_start "$name" "$work/$name.timeline"
      read -r req0 rl0 < <(ctl_metrics)
      ctl_requests >"$work/$name.req0"
      t0=$(now)
      if ! operator_run "$name" "$work/$name.log"; then
        t1=$(now)
        timeline_stop
        cat "$work/$name.log" >&2
        kubectl get migration "$name" -o yaml >&2 || true
        die "round $r: the Migration did not complete (after $(secs "$t0" "$t1") s)"
      fi
      t1=$(now)
      read -r req1 rl1 < <(ctl_metrics)
      ctl_requests >"$work/$name.req1"
      timeline_stop
      check_target "round $r, operator"
      check_args "$name"
      kubectl logs "job/$name-worker-1" >"$work/$name-worker.log" 2>&1 || true
      secs "$t0" "$t1" >>"$work/op.times"
      echo "  round $r: operator (apply..Complete) $(secs "$t0" "$t1") s (the worker's pgcopydb's own total: $(pgc_total "$work/$name-worker.log") s)"
      explain "$t0" "$work/$name.timeline" "$rl0" "$rl1" >"$work/$name.explain"
      grep -v '^SPLIT' "$work/$name.explain" || true
      echo "      the controller: $((req1 - req0)) API requests ($(requests_diff "$work/$name.req0" "$work/$name.req1")), $(secs "$rl0" "$rl1") s in all waiting for its client-side rate limiter"
      awk '/^SPLIT/ { print $2, $3, $4, $5, $6 }' "$work/$name.explain" >>"$work/split.times"
      kubectl delete migration "$name" --wait=false >/dev/null 2>&1 || true
    fi
  done
done

bare_med=$(median "$work/bare.times")
op_med=$(median "$work/op.times")
ratio=$(awk -v a="$op_med" -v b="$bare_med" 'BEGIN { printf "%.3f", a / b }')
echo
echo "bare pgcopydb clone: median $bare_med s (rounds: $(tr '\n' ' ' <"$work/bare.times"))"
echo "operator, apply to Complete: median $op_med s (rounds: $(tr '\n' ' ' <"$work/op.times"))"
if [ -s "$work/split.times" ]; then
  awk '{ w += $1; b += $2; a += $3; rb += $4; ra += $5; n++ }
    END { printf "  of which (means): worker Job %.2f s; outside it %.2f s (before %.2f: kubectl apply, admission, preflight Job, Job creation; after %.2f: catalog Job, status), of which %.2f s waiting for the controller'"'"'s client-side rate limiter\n", w / n, (b + a) / n, b / n, a / n, (rb + ra) / n }' "$work/split.times"
  awk -v bare="$bare_med" '{ o += $2 + $3; n++ } END { printf "  the fixed cost alone (bare + the mean time outside the worker Job) would give a ratio of %.3f at this size\n", (bare + o / n) / bare }' "$work/split.times"
fi
echo "ratio operator/bare: $ratio (goal <= 1.05: $(awk -v r="$ratio" 'BEGIN { print (r <= 1.05 ? "met" : "MISSED") }'))"

# ---- the probe: one sample as the controller takes it (kept session), next to connect + SELECT 1
# and to the sample with a login each time (as the controller took it before it kept sessions)
echo
probe_stats() { # FILE KIND -> "p50_us p99_us n logins first_us" (the last two: kind sample only)
  awk -v k="kind=$2" '$2 == k { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    print v["p50_us"], v["p99_us"], v["n"], (v["logins"] == "" ? "-" : v["logins"]), (v["first_us"] == "" ? "-" : v["first_us"]) }' "$1"
}
probe_report() { # FILE TITLE
  local f=$1 s1_50 s1_99 s1_n pr_50 pr_99 sa_50 sa_99 sa_logins sa_first ls_50 ls_99 se_50 se_99 q_50 q_99
  read -r s1_50 s1_99 s1_n _ _ < <(probe_stats "$f" select1)
  read -r pr_50 pr_99 _ _ _ < <(probe_stats "$f" probe)
  read -r sa_50 sa_99 _ sa_logins sa_first < <(probe_stats "$f" sample)
  read -r ls_50 ls_99 _ _ _ < <(probe_stats "$f" login_sample)
  read -r se_50 se_99 _ _ _ < <(probe_stats "$f" secret)
  read -r q_50 q_99 _ _ _ < <(probe_stats "$f" query)
  ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
  goal() { awk -v a="$1" -v b="$2" 'BEGIN { print (b <= 10000 ? "met" : (a <= 10000 ? "median met, p99 MISSED" : "MISSED")) }'; }
  echo "$2 ($s1_n samples of each kind; median / p99 in ms):"
  # the first sample logs in (as the controller's first sample of a Migration does): with few
  # samples (under load) it is the p99
  local p99_note=''
  [ "$sa_first" != - ] && awk -v p="$sa_99" -v f="$sa_first" 'BEGIN { exit !(p >= f) }' &&
    p99_note=' (the p99 is the first sample, the one that logged in)'
  echo "  whole sample, kept session (Secret read + digest + probe query): $(ms "$sa_50") / $(ms "$sa_99")   goal <= 10 ms: $(goal "$sa_50" "$sa_99")$p99_note"
  echo "    sample/baseline $(ratio "$sa_50" "$s1_50"), sample/login sample $(ratio "$sa_50" "$ls_50") (medians); logins: $sa_logins, the first sample (with its login) $(ms "$sa_first") ms"
  echo "    Secret read through the API server:            $(ms "$se_50") / $(ms "$se_99")"
  echo "    the probe query alone, on an open connection:  $(ms "$q_50") / $(ms "$q_99")"
  echo "  before, a login every sample (Secret read + connect + probe query + close): $(ms "$ls_50") / $(ms "$ls_99")   goal <= 10 ms: $(goal "$ls_50" "$ls_99")"
  echo "    connect + probe query + close:                 $(ms "$pr_50") / $(ms "$pr_99")"
  echo "  baseline, connect + SELECT 1 + close:            $(ms "$s1_50") / $(ms "$s1_99")   probe/baseline $(ratio "$pr_50" "$s1_50")"
  awk '$2 == "kind=seen" { print "  the probe saw at most", substr($3, 10), "COPY and", substr($4, 11), "other active workers; target", $5 }' "$f"
}
probe_args=(--kubeconfig "$KUBECONFIG" --namespace default --secret dst --appname "$APPNAME")
if [ "$under_load" = 1 ]; then
  reset_target
  "$build/godwit-bench-probe" "${probe_args[@]}" --samples 0 --interval-ms 100 \
    >"$work/probe-load.out" 2>"$work/probe-load.err" &
  probe_pid=$!
  bg+=("$probe_pid")
  bare_run "$work/bare-probe.log" || { tail -n 20 "$work/bare-probe.log" >&2; die "the bare clone under the probe failed"; }
  kill -TERM "$probe_pid"
  wait "$probe_pid" || { cat "$work/probe-load.err" >&2; die "godwit-bench-probe failed during the clone"; }
  bg=()
  probe_report "$work/probe-load.out" "probe during a bare clone, one round of samples every 100 ms"
fi
"$build/godwit-bench-probe" "${probe_args[@]}" --samples "$samples" >"$work/probe.out" \
  2>"$work/probe.err" || { cat "$work/probe.err" >&2; die "godwit-bench-probe failed"; }
probe_report "$work/probe.out" "probe on the loaded, idle target"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
