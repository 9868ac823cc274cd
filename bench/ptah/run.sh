#!/bin/bash
# The Ptah benchmark (make bench-ptah, part of make bench): 200 small versioned SQL files applied
# to a fresh database three ways, in one invocation, on one PostgreSQL 15 server:
#   baseline  `psql -X -q -1 -v ON_ERROR_STOP=1 -f FILE` once per file, one after another, as a
#             deploy script would;
#   runner    `godwit-runner ptah-migrate --type Apply --result none` once with the directory
#             (the step a PtahMigration's Job runs, alone);
#   operator  a PtahMigration on the local cluster (webhook, controller, job runner, the runner in
#             a Pod, its PtahResultRecord), timed from `kubectl apply` to condition Ready=True;
# then, on the database the operator just migrated, a second PtahMigration with the same ConfigMap
# (nothing new: outcome UpToDate), whose apply-to-Ready time is the fixed cost of a run (Job,
# Pod, runner start, record, controller pass). Every run is checked (the last version, a history
# row per version). Prints the medians, the ratios runner/baseline and operator/baseline
# (goal <= 1.3), where the operator's time goes (from kubectl watches, timestamped as events
# arrive), and the result-record round trip (record created -> Ready). One line for other tools:
#   ptah-bench: versions=N psql_s=S runner_s=S operator_s=S uptodate_s=S record_to_ready_ms=M
#     ratio_runner=R ratio_operator=R
# docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/ptah/run.sh [BUILD]      BUILD holds the binaries of `make all` (default: build)
# Environment (all optional):
#   PTAH_BENCH_RUNS=5        rounds; each runs the three once, in rotating order; medians reported
#   PTAH_BENCH_VERSIONS=200  migration files
#   PTAH_BENCH_TIMEOUT=120   seconds a PtahMigration may take to become Ready
#   PTAH_BENCH_KEEP=0        1: leave the work directory (logs, the cluster's) in /tmp
#   PTAH_BENCH_LOG_LEVEL=warn  log level of the local cluster's programs
#   GODWIT_POLL_INTERVAL_MS, ...: reach the controller (see godwit-controller --help); unset,
#                            the controller's defaults apply, as in a deployment
# Runs as any user; as root, PostgreSQL runs as the system user godwit-pg (tests/pg/pgserver.sh).
# Everything it starts is stopped, and its directory removed, on exit (also on Ctrl-C, and by a
# watchdog if the script itself is killed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
runs=${PTAH_BENCH_RUNS:-5}
versions=${PTAH_BENCH_VERSIONS:-200}
timeout=${PTAH_BENCH_TIMEOUT:-120}
PGBIN=/usr/lib/postgresql/15/bin
GOAL=1.3

die() { echo "bench-ptah: $*" >&2; exit 1; }
for v in runs versions timeout; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
[ "$versions" -le 9999 ] || die "versions must be at most 9999, got $versions"
command -v kubectl >/dev/null 2>&1 || die "kubectl is not installed: run 'make deps'"
command -v psql >/dev/null 2>&1 || die "psql is not installed: run 'make deps'"
[ -x "$PGBIN/initdb" ] || die "PostgreSQL 15 is not installed ($PGBIN): run 'make deps'"
for b in godwit-apiserver godwit-webhook godwit-jobrunner godwit-controller godwit-runner \
  godwit-certs godwit-yaml2json; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make bench-ptah' (or make BUILD=$build all)"
done

work=$(mktemp -d /tmp/godwit-bench-ptah-XXXXXX)
chmod 755 "$work" # the PostgreSQL server runs as godwit-pg when we are root
cluster=$work/cluster
# kubectl's discovery cache goes with the directory, not into ~/.kube/cache
export KUBECONFIG=$cluster/kubeconfig GODWIT_BUILD=$build KUBECACHEDIR=$work/kube-cache
pg_up='' cluster_up='' bg=() watchdog='' waiting=''
cleanup() {
  set +e
  [ -n "$watchdog" ] && kill -KILL "$watchdog" 2>/dev/null
  [ -n "$waiting" ] && bg+=("$waiting")
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${bg[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$cluster_up" ] && "$ROOT/tests/localcluster/down" --dir "$cluster" >/dev/null 2>&1
  [ -n "$pg_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/pg" >/dev/null 2>&1
  if [ "${PTAH_BENCH_KEEP:-0}" = 1 ]; then echo "bench-ptah: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# If this script is killed outright (no trap runs), the watchdog does what cleanup does: stops
# its kubectl processes (listed in work/pids, recognised by their KUBECONFIG), the local cluster,
# the server, and removes the directory.
: >"$work/pids"
(
  set +e
  trap '' INT TERM HUP
  while kill -0 $$ 2>/dev/null; do sleep 1; done
  while read -r p; do
    grep -qxzF "KUBECONFIG=$KUBECONFIG" "/proc/$p/environ" 2>/dev/null && kill "$p"
  done <"$work/pids"
  "$ROOT/tests/localcluster/down" --dir "$cluster"
  "$ROOT/tests/pg/pgserver.sh" stop "$work/pg"
  rm -rf "$work"
) </dev/null >/dev/null 2>&1 &
watchdog=$!
disown "$watchdog" # its end (SIGKILL from cleanup) is no job to report

# shared: now, secs, median, port_free, bench_pg_up, bench_psql
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
list() { tr '\n' ' ' <"$1" | sed 's/ $//'; }

# ---- PostgreSQL 15 on a free loopback port
start_pg() {
  pg_up=1
  port=$(bench_pg_up "$work/pg")
}
# sql DB [psql args...]: as the superuser over the server's unix socket
sql() {
  local db=$1
  shift
  bench_psql "$work/pg" "$port" "$db" -At "$@"
}
# fresh_db NAME: an empty database owned by the application role; prints its URI over TCP
# without the password (psql gets it in PGPASSWORD, the runner in the URI: uri_pw)
fresh_db() {
  sql postgres -c "CREATE DATABASE \"$1\" OWNER app"
  echo "postgresql://app@127.0.0.1:$port/$1"
}
uri_pw() { echo "${1/app@/app:$app_pw@}"; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "godwit Ptah benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $(uname -sr)"
echo "$("$PGBIN/postgres" --version), $(psql --version), kubectl $(kubectl version --client 2>/dev/null | awk '/Client Version/ { print $3 }')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ exit !($1 > 0.5) }' /proc/loadavg &&
  echo "bench-ptah: the machine is not idle (load average above 0.5): wall times will be noisy" >&2

start_pg || die "PostgreSQL did not start"
app_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
export PGPASSWORD=$app_pw # the application role's, for psql over TCP (kept out of command lines)
sql postgres <<<"CREATE ROLE app LOGIN PASSWORD '$app_pw'" # on stdin: not on a command line

# ---- the migrations: a table each, ten rows, an index on every third, a column added to the
# previous table on every fifth
mig=$work/migrations
mkdir "$mig"
for ((i = 1; i <= versions; i++)); do
  {
    echo "-- version $i of the Ptah benchmark"
    echo "CREATE TABLE t$i (id int PRIMARY KEY, v text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());"
    echo "INSERT INTO t$i (id, v) SELECT g, 'row ' || g FROM generate_series(1, 10) g;"
    [ $((i % 3)) = 0 ] && echo "CREATE INDEX t${i}_v ON t$i (v);"
    [ $((i % 5)) = 0 ] && echo "ALTER TABLE t$((i - 1)) ADD COLUMN note text;"
    true
  } >"$mig/$(printf '%04d' "$i")_table_$i.sql"
done
files=("$mig"/*.sql)
[ "${#files[@]}" = "$versions" ] || die "generated ${#files[@]} files, not $versions"
# the reference (not a goal): the same files in one psql session, a transaction each
for f in "${files[@]}"; do printf 'BEGIN;\n\\i %s\nCOMMIT;\n' "$f"; done >"$work/one-session.sql"
echo "migrations: $versions files, $(cat "${files[@]}" | wc -c) bytes in all"

# ---- the local cluster with the controller; the ConfigMap of the files
t=$(now)
cluster_up=1
"$ROOT/tests/localcluster/up" --dir "$cluster" --with-controller \
  --log-level "${PTAH_BENCH_LOG_LEVEL:-warn}" >"$work/up.log" 2>&1 ||
  { cat "$work/up.log" >&2; die "the local cluster did not start"; }
kubectl create configmap ptah-bench --from-file="$mig" >/dev/null ||
  die "kubectl create configmap failed"
echo "the local cluster and the ConfigMap ready in $(secs "$t" "$(now)") s"

# ---- a timeline: one kubectl watch per kind, each line stamped as it arrives
# ("<epoch> <tag> <columns...>"), read by explain() after each PtahMigration
watch_kind() {
  local kind=$1 tag=$2 cols=$3
  kubectl get "$kind" --watch --no-headers -o "custom-columns=$cols" 2>/dev/null \
    > >(while IFS= read -r l; do echo "$EPOCHREALTIME $tag $l"; done >>"$work/timeline") &
  bg+=($!)
  echo $! >>"$work/pids"
}
: >"$work/timeline"
watch_kind ptahmigrations pm 'N:.metadata.name,R:.status.conditions[?(@.type=="Ready")].status'
watch_kind jobs job 'N:.metadata.name'
watch_kind pods pod 'N:.metadata.name,P:.status.phase'
watch_kind ptahresultrecords rec 'N:.metadata.name'
sleep 1.5 # the watches are established before the first apply

# ---- the three ways
baseline_run() { # URI LOG
  local f
  for f in "${files[@]}"; do
    psql -X -q -1 -v ON_ERROR_STOP=1 -d "$1" -f "$f" >>"$2" 2>&1 || return 1
  done
}
runner_run() { # URI OPERATION REPORT LOG
  GODWIT_DATABASE_URI=$(uri_pw "$1") "$build/godwit-runner" ptah-migrate --operation "$2" --type Apply \
    --owner-name ptah-bench --namespace default --job-name "$2" --migrations-dir "$mig" \
    --protocol 1 --result none --report "$3" >"$4" 2>&1
}
# operator_run NAME SECRET LOG: apply the PtahMigration, wait for Ready (in the background, so a
# signal ends the wait at once); the caller times it
operator_run() {
  local rc=0
  cat >"$work/$1.yaml" <<EOF
apiVersion: ptah.run/v1
kind: PtahMigration
metadata: {name: $1}
spec:
  database: {connectionSecretRef: {name: $2}}
  migrations: {configMapRef: {name: ptah-bench}}
EOF
  kubectl apply -f "$work/$1.yaml" >"$3" 2>&1 || return 1
  kubectl wait --for=condition=Ready "ptahmigration/$1" --timeout="${timeout}s" >>"$3" 2>&1 &
  waiting=$!
  echo "$waiting" >>"$work/pids"
  wait "$waiting" || rc=$?
  waiting=''
  return "$rc"
}
operator_failed() { # NAME LOG MESSAGE
  cat "$2" >&2
  kubectl get ptahmigration "$1" -o yaml >&2 || true
  kubectl get pods -o wide >&2 || true
  die "$3"
}
history_rows() { sql "$1" -c 'SELECT count(*) FROM public.ptah_migrations'; }
versions_ms() { sql "$1" -c 'SELECT coalesce(sum(execution_ms), 0) FROM public.ptah_migrations'; }
pm_field() { kubectl get ptahmigration "$1" -o "jsonpath=$2"; }
epoch_of() { date -u -d "$1" +%s; }

# explain NAME T0 T1: when, in seconds after the apply at T0, the PtahMigration was stored, its
# Job created, the Pod running, the Pod done, the record created, Ready=True; and T1 (kubectl
# wait returned). Prints "T stored job running done record ready returned" (- when unseen).
explain() {
  awk -v n="$1" -v t0="$2" -v t1="$3" '
    function at(t) { return t == "" ? "-" : sprintf("%.3f", t - t0) }
    $2 == "pm" && $3 == n && stored == "" { stored = $1 }
    $2 == "pm" && $3 == n && $4 == "True" && ready == "" { ready = $1 }
    index($3, n "-apply-") != 1 { next }
    $2 == "job" && job == "" { job = $1 }
    $2 == "pod" && $4 == "Running" && run == "" { run = $1 }
    $2 == "pod" && ($4 == "Succeeded" || $4 == "Failed") && done == "" { done = $1 }
    $2 == "rec" && rec == "" { rec = $1 }
    END { print "T", at(stored), at(job), at(run), at(done), at(rec), at(ready), at(t1) }' "$work/timeline"
}

for f in base one runner op uptodate op_files rt_s psql1 runner_files; do : >"$work/$f.times"; done
: >"$work/split.op"
: >"$work/split.uptodate"

run_base() {
  local r=$1 uri t0 t1 n i
  uri=$(fresh_db "base_$r")
  t0=$(now)
  baseline_run "$uri" "$work/base-$r.log" || { cat "$work/base-$r.log" >&2; die "round $r: psql failed"; }
  t1=$(now)
  n=$(sql "base_$r" -c "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
  [ "$n" = "$versions" ] || die "round $r: psql left $n tables, not $versions"
  secs "$t0" "$t1" >>"$work/base.times"
  # what one psql process costs on its own: start, login (scram-sha-256), an empty query, exit
  t0=$(now)
  for ((i = 0; i < 20; i++)); do psql -X -q -d "$uri" -c 'SELECT 1' >/dev/null; done
  awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f\n", (b - a) * 1000 / 20 }' >>"$work/psql1.times"
  # the reference: one session, a transaction per file
  uri=$(fresh_db "one_$r")
  t0=$(now)
  psql -X -q -v ON_ERROR_STOP=1 -d "$uri" -f "$work/one-session.sql" >"$work/one-$r.log" 2>&1 ||
    { cat "$work/one-$r.log" >&2; die "round $r: psql (one session) failed"; }
  secs "$t0" "$(now)" >>"$work/one.times"
  echo "  round $r: psql -1 -f, one process a file   $(tail -n1 "$work/base.times") s (a psql start and login alone: $(tail -n1 "$work/psql1.times") ms; the files in one psql session: $(tail -n1 "$work/one.times") s)"
}

run_runner() {
  local r=$1 uri t0 t1 rep
  uri=$(fresh_db "runner_$r")
  t0=$(now)
  runner_run "$uri" "ptah-bench-$r" "$work/runner-$r.json" "$work/runner-$r.log" ||
    { cat "$work/runner-$r.log" >&2; die "round $r: godwit-runner ptah-migrate failed"; }
  t1=$(now)
  rep=$(cat "$work/runner-$r.json")
  [[ $rep == *'"outcome":"Applied"'* && $rep == *"\"toVersion\":$versions,"* ]] ||
    die "round $r: the runner's report is not Applied to version $versions: $rep"
  [ "$(history_rows "runner_$r")" = "$versions" ] || die "round $r: the history table has not $versions rows"
  secs "$t0" "$t1" >>"$work/runner.times"
  awk -v m="$(versions_ms "runner_$r")" 'BEGIN { printf "%.2f\n", m / 1000 }' >>"$work/runner_files.times"
  echo "  round $r: godwit-runner ptah-migrate        $(tail -n1 "$work/runner.times") s ($(tail -n1 "$work/runner_files.times") s in the versions' statements)"
}

# run_op R: the PtahMigration ptah-bench-R on a fresh database, then ptah-again-R (UpToDate)
run_op() {
  local r=$1 name again uri t0 t1 v rec ready
  name=ptah-bench-$r again=ptah-again-$r
  uri=$(fresh_db "op_$r")
  (umask 077 && printf '%s' "$(uri_pw "$uri")" >"$work/uri")
  kubectl create secret generic "db-$r" --from-file=uri="$work/uri" >/dev/null
  rm -f "$work/uri"
  t0=$(now)
  operator_run "$name" "db-$r" "$work/$name.log" ||
    operator_failed "$name" "$work/$name.log" "round $r: $name did not become Ready within ${timeout}s"
  t1=$(now)
  v=$(pm_field "$name" '{.status.currentVersion} {.status.lastRun.outcome}')
  [ "$v" = "$versions Applied" ] || operator_failed "$name" "$work/$name.log" "round $r: $name ended '$v', not '$versions Applied'"
  [ "$(history_rows "op_$r")" = "$versions" ] || die "round $r: the history table has not $versions rows"
  secs "$t0" "$t1" >>"$work/op.times"
  awk -v m="$(versions_ms "op_$r")" 'BEGIN { printf "%.2f\n", m / 1000 }' >>"$work/op_files.times"
  sleep 0.2 # the watches' last lines
  explain "$name" "$t0" "$t1" >>"$work/split.op"
  echo "  round $r: PtahMigration, apply to Ready      $(tail -n1 "$work/op.times") s ($(tail -n1 "$work/op_files.times") s in the versions' statements)"
  # the record round trip in the objects' own (second) resolution
  rec=$(kubectl get ptahresultrecords -o "jsonpath={range .items[?(@.spec.ownerRef.name==\"$name\")]}{.metadata.creationTimestamp}{\"\\n\"}{end}")
  ready=$(pm_field "$name" '{.status.conditions[?(@.type=="Ready")].lastTransitionTime}')
  if [ -n "$rec" ] && [ -n "$ready" ]; then
    echo $(($(epoch_of "$ready") - $(epoch_of "${rec##*$'\n'}"))) >>"$work/rt_s.times"
  else
    echo - >>"$work/rt_s.times"
  fi

  t0=$(now)
  operator_run "$again" "db-$r" "$work/$again.log" ||
    operator_failed "$again" "$work/$again.log" "round $r: $again did not become Ready within ${timeout}s"
  t1=$(now)
  v=$(pm_field "$again" '{.status.currentVersion} {.status.lastRun.outcome}')
  [ "$v" = "$versions UpToDate" ] || operator_failed "$again" "$work/$again.log" "round $r: $again ended '$v', not '$versions UpToDate'"
  secs "$t0" "$t1" >>"$work/uptodate.times"
  sleep 0.2
  explain "$again" "$t0" "$t1" >>"$work/split.uptodate"
  echo "  round $r: PtahMigration, nothing new (UpToDate) $(tail -n1 "$work/uptodate.times") s"
  kubectl delete ptahmigration "$name" "$again" --wait=false >/dev/null 2>&1 || true
}

echo
echo "rounds: $runs, each on fresh databases, in rotating order"
for ((r = 1; r <= runs; r++)); do
  case $((r % 3)) in
    1) order="base runner op" ;;
    2) order="runner op base" ;;
    0) order="op base runner" ;;
  esac
  for side in $order; do "run_$side" "$r"; done
done

# ---- the summary
# split_median FILE COL_A COL_B: the median over the rounds of column B - column A of explain's
# lines (2 stored, 3 job, 4 running, 5 done, 6 record, 7 ready, 8 returned; 1 is the apply)
split_median() {
  awk -v a="$2" -v b="$3" '{ x = (a == 1 ? 0 : $(a)); y = $(b); if (x != "-" && y != "-") print y - x }' "$1" >"$work/split.tmp"
  if [ -s "$work/split.tmp" ]; then median "$work/split.tmp" 3 | awk '{ printf "%.3f\n", $1 }'; else echo "-"; fi
}
# split_row TEXT A B: a line of the table of where the time goes, both PtahMigrations
split_row() {
  printf '    %-84s %8s %8s\n' "$1" "$(split_median "$work/split.op" "$2" "$3")" \
    "$(split_median "$work/split.uptodate" "$2" "$3")"
}
base_med=$(median "$work/base.times" 3)
runner_med=$(median "$work/runner.times" 3)
op_med=$(median "$work/op.times" 3)
up_med=$(median "$work/uptodate.times" 3)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
verdict() { awk -v r="$1" -v g="$GOAL" 'BEGIN { print (r <= g ? "met" : "MISSED") }'; }
r_runner=$(ratio "$runner_med" "$base_med")
r_op=$(ratio "$op_med" "$base_med")
rt_med=$(split_median "$work/split.op" 6 7)
echo
echo "medians of $runs rounds ($versions versions):"
echo "  baseline, psql -1 -f per file:        $base_med s  (rounds: $(list "$work/base.times"); a psql start and login alone: $(median "$work/psql1.times" 3) ms)"
echo "  reference, the files in one psql session, a transaction each: $(median "$work/one.times" 3) s  (rounds: $(list "$work/one.times"))"
echo "  godwit-runner ptah-migrate alone:     $runner_med s  (rounds: $(list "$work/runner.times"); in the versions' statements: $(median "$work/runner_files.times" 3) s)"
echo "  PtahMigration, apply to Ready:        $op_med s  (rounds: $(list "$work/op.times"); in the versions' statements: $(median "$work/op_files.times" 3) s)"
echo "  PtahMigration with nothing new:       $up_med s  (rounds: $(list "$work/uptodate.times"))"
echo "  where a PtahMigration's time goes (medians over the rounds, from kubectl watches; s):"
printf '    %-84s %8s %8s\n' "" "$versions new" "UpToDate"
split_row "kubectl apply until the object is stored (kubectl, admission)" 1 2
split_row "until its Job is created (the controller: Pending, the claim, the dispatch)" 2 3
split_row "until the Pod runs (the job runner: Pod, binding, token, ConfigMap volume, exec)" 3 4
split_row "until the record is created (the runner: files, login, lock, versions, record)" 4 6
split_row "until Ready=True (the Pod's exit, the Job's status, the controller's settle)" 6 7
split_row "until kubectl wait returns" 7 8
split_row "(the runner's Pod, running to done)" 4 5
echo "result-record round trip: record created -> Ready=True $(awk -v s="$rt_med" 'BEGIN { print (s == "-" ? "-" : sprintf("%.0f", s * 1000)) }') ms (watch events; median),"
echo "  Ready's lastTransitionTime - the record's creationTimestamp: $(list "$work/rt_s.times") s (second resolution);"
echo "  a whole run with nothing to apply, apply to Ready: $up_med s"
echo "ratio runner/baseline:   $r_runner (goal <= $GOAL: $(verdict "$r_runner"))"
echo "ratio operator/baseline: $r_op (goal <= $GOAL: $(verdict "$r_op"))"
echo "ptah-bench: versions=$versions psql_s=$base_med runner_s=$runner_med operator_s=$op_med uptodate_s=$up_med record_to_ready_ms=$(awk -v s="$rt_med" 'BEGIN { print (s == "-" ? "-" : sprintf("%.0f", s * 1000)) }') ratio_runner=$r_runner ratio_operator=$r_op"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
