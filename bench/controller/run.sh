#!/bin/bash
# The controller at scale (make bench-controller, part of make bench): N dry-run Migrations
# created at once in the local cluster, each driven by godwit-controller to its terminal state
# (Pending, Validating, the preflight Job against one real PostgreSQL pair, DryRunSucceeded);
# then suspended Migrations until the controller's caches hold M objects (Migrations, their Jobs
# and Pods), and the controller's resident memory. One line each, for other tools:
#   controller-scale: objects=N seconds=S api_requests=R requests_per_object=Q controller_rss_mib=M
#   controller-cache: objects=M controller_rss_mib=M
# Goals (docs/operations/benchmarks.md): N=500 done in under 60 s on 2 CPUs, at most 10 API
# requests per dry-run Migration, at most 64 MiB of controller RSS with 5,000 cached objects.
#
#   bench/controller/run.sh [BUILD]
# Environment: BENCH_OBJECTS=500, BENCH_CACHE_OBJECTS=5000, BENCH_TIMEOUT=300 (seconds for each
# wait), BENCH_KEEP=0 (1: leave the work directory), BENCH_LOG_LEVEL=warn
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
N=${BENCH_OBJECTS:-500}
CACHE=${BENCH_CACHE_OBJECTS:-5000}
TIMEOUT=${BENCH_TIMEOUT:-300}
die() { echo "bench-controller: $*" >&2; exit 1; }
for b in godwit-controller godwit-apiserver godwit-jobrunner godwit-webhook godwit-runner; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make bench-controller'"
done
command -v kubectl >/dev/null || die "kubectl is missing (make deps)"

work=$(mktemp -d /tmp/godwit-bench-ctl-XXXXXX)
chmod 755 "$work" # the PostgreSQL servers run as godwit-pg when we are root
cluster=$work/cluster
export KUBECONFIG=$cluster/kubeconfig GODWIT_BUILD=$build
src_up='' dst_up='' cluster_up=''
cleanup() {
  set +e
  [ -n "$cluster_up" ] && "$ROOT/tests/localcluster/down" --dir "$cluster" >/dev/null 2>&1
  [ -n "$src_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/src" >/dev/null 2>&1
  [ -n "$dst_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/dst" >/dev/null 2>&1
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "bench: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shared: now, port_free, bench_pg_up, bench_psql
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
pg_up() { PG_MAX_CONNECTIONS=400 bench_pg_up "$@"; }
sql() { bench_psql "$@"; }
requests() {
  curl -sf "http://127.0.0.1:$ctl_port/metrics" |
    awk '/^godwit_kube_requests_total\{/ { n += $2 } END { print n + 0 }'
}
limiter_wait() {
  curl -sf "http://127.0.0.1:$ctl_port/metrics" |
    awk '/^godwit_kube_ratelimiter_wait_seconds_total/ { w += $2 } END { printf "%.1f\n", w }'
}
# cpu_s PID: the process's user + system CPU so far, in seconds (with its reaped children's)
cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13 + $14 + $15) / hz }' \
    "/proc/$1/stat" 2>/dev/null || echo 0
}
# cluster_cpu: "name=seconds ..." for each process of the local cluster
cluster_cpu() {
  local name pid
  while read -r name pid; do printf '%s=%s ' "$name" "$(cpu_s "$pid")"; done <"$cluster/pids"
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "machine_busy=%.1f machine_idle=%.1f", ($2 + $3 + $4 + $7 + $8) / hz, ($5 + $6) / hz }' /proc/stat
}
# latency: the controller's mean API request latency by verb, in ms
latency() {
  curl -sf "http://127.0.0.1:$ctl_port/metrics" | awk '
    /^godwit_kube_request_duration_seconds_sum/ { match($0, /verb="[a-z]+"/); v = substr($0, RSTART + 6, RLENGTH - 7); s[v] = $2 }
    /^godwit_kube_request_duration_seconds_count/ { match($0, /verb="[a-z]+"/); v = substr($0, RSTART + 6, RLENGTH - 7); c[v] = $2 }
    END { for (v in c) if (c[v] > 0 && v != "watch") printf "%s=%.1fms/%d ", v, 1000 * s[v] / c[v], c[v] }'
}
rss_mib() { awk '/^VmRSS:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$ctl_pid/status"; }
phase_list() { kubectl get migrations -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}'; }
phases() { phase_list 2>/dev/null | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'; }
count_phases() { phase_list 2>/dev/null | grep -cE "^($1)\$" || true; }

echo "godwit controller benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -sr)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/tests/localcluster/up" --dir "$cluster" --with-controller \
  --log-level "${BENCH_LOG_LEVEL:-warn}" >"$work/up.log" 2>&1 ||
  { cat "$work/up.log"; die "the local cluster did not start"; }
cluster_up=1
ctl_port=$(sed -n 's/^controller=//p' "$cluster/ports")
ctl_pid=$(awk '$1 == "controller" { print $2 }' "$cluster/pids")
[ -n "$ctl_port" ] && [ -n "$ctl_pid" ] || die "the controller's port or pid is unknown"

src_port=$(pg_up "$work/src") || die "the source server did not start"
src_up=1
dst_port=$(pg_up "$work/dst") || die "the target server did not start"
dst_up=1
sql "$work/src" "$src_port" postgres -c "CREATE ROLE src_app LOGIN PASSWORD 'bench-src'" \
  -c "CREATE DATABASE shop"
sql "$work/src" "$src_port" shop -c "CREATE TABLE t(id int PRIMARY KEY)" \
  -c "GRANT SELECT ON t TO src_app"
sql "$work/dst" "$dst_port" postgres -c "CREATE ROLE dst_app LOGIN PASSWORD 'bench-dst'" \
  -c "CREATE DATABASE shop OWNER dst_app"
kubectl create secret generic src \
  --from-literal=uri="postgres://src_app:bench-src@127.0.0.1:$src_port/shop" >/dev/null
kubectl create secret generic dst \
  --from-literal=uri="postgres://dst_app:bench-dst@127.0.0.1:$dst_port/shop" >/dev/null

# migrations FIRST COUNT FIELD: a multi-document YAML of COUNT Migrations with spec.FIELD: true
migrations() {
  local first=$1 count=$2 field=$3 i
  for ((i = first; i < first + count; i++)); do
    printf -- '---\napiVersion: pgcopydb.io/v1\nkind: Migration\nmetadata:\n  name: m%05d\n' "$i"
    printf 'spec:\n  source:\n    connectionSecretRef: {name: src}\n  target:\n'
    printf '    connectionSecretRef: {name: dst}\n  worker:\n    workDir: {size: 1Gi}\n'
    printf '  %s: true\n' "$field"
  done
}
migrations 0 "$N" dryRun >"$work/dry.yaml"

req0=$(requests)
w0=$(limiter_wait)
cpu0=$(cluster_cpu)
t0=$(now)
kubectl apply -f "$work/dry.yaml" >/dev/null || die "kubectl apply failed"
t_applied=$(now)
deadline=$(($(date +%s) + TIMEOUT))
last=0
while [ "$(count_phases 'Completed|Failed')" -lt "$N" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "not all $N Migrations ended within ${TIMEOUT}s: $(phases)"
  if [ "${BENCH_VERBOSE:-0}" = 1 ] && [ $(($(date +%s) - last)) -ge 5 ]; then
    last=$(date +%s)
    echo "  $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%5.1f", b - a }') s: $(phases)pods: $(kubectl get pods --no-headers 2>/dev/null | awk '{ print $3 }' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')"
  fi
  sleep 0.5
done
t1=$(now)
sleep 2 # the last Events
req1=$(requests)
w1=$(limiter_wait)
reqs=$((req1 - req0))
echo "phases: $(phases)(kubectl apply of the $N took $(awk -v a="$t0" -v b="$t_applied" 'BEGIN { printf "%.1f", b - a }') s; the controller's requests waited $(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.1f", b - a }') s in all for its client-side rate limiter, --kube-api-qps ${GODWIT_KUBE_API_QPS:-50})"
if [ "${BENCH_VERBOSE:-0}" = 1 ]; then
  echo "CPU seconds of the cluster's processes, before: $cpu0"
  echo "                                         after: $(cluster_cpu)"
  echo "the controller's requests, mean latency/count by verb: $(latency)"
fi
failed=$(count_phases Failed)
[ "$failed" = 0 ] || echo "bench-controller: $failed of the $N dry runs failed" >&2
echo "controller-scale: objects=$N seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') api_requests=$reqs requests_per_object=$(awk -v r="$reqs" -v n="$N" 'BEGIN { printf "%.1f", r / n }') controller_rss_mib=$(rss_mib)"

# The caches at CACHE objects: the N Migrations, their Jobs and Pods, and suspended Migrations.
cached=$((N * 3))
more=$((CACHE - cached))
if [ "$more" -gt 0 ]; then
  migrations "$N" "$more" suspend >"$work/suspended.yaml"
  kubectl apply -f "$work/suspended.yaml" >/dev/null || die "kubectl apply of the suspended Migrations failed"
  deadline=$(($(date +%s) + TIMEOUT))
  until [ "$(count_phases Suspended)" -ge "$more" ]; do
    [ "$(date +%s)" -lt "$deadline" ] ||
      die "the suspended Migrations were not all seen within ${TIMEOUT}s: $(phases)"
    sleep 1
  done
  cached=$CACHE
fi
echo "controller-cache: objects=$cached controller_rss_mib=$(rss_mib)"
[ "$failed" = 0 ] || exit 1
