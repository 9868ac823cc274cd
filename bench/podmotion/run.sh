#!/bin/sh
# The PodMotion benchmark (make bench-podmotion; issue 11): the freeze window and the total time
# of a PodMigration of a live TCP server, against a bare `criu dump` + `criu restore` of the same
# server between two network namespaces (the baseline), in one invocation:
#   PodMotion  the local cluster (tests/localcluster/up --worker-nodes node-a,node-b,node-c
#              --with-controller: API server, webhook, kubelets, one node agent per worker node,
#              the controller); the CRIU counter ($BUILD/tests/criu-counter 0.0.0.0 7000) as a
#              Pod on node-a with a tcpSocket readiness probe, a MigrationPolicy allowing
#              StopAndCopy, then N PodMigrations (StopAndCopy), alternating node-a -> node-b and
#              node-b -> node-a, each moving the pod the previous one restored
#              (status.destinationPodName), verified by the readiness probe (the default
#              verification.mode). Per move: status.freezeDuration (the controller's: the source
#              agent's dump start to the restored tree running) and the total, from before
#              `kubectl create` to `kubectl wait --for=condition=Complete` returning.
#   bare       tests/cluster/test_criu_tcp.c's move in sh: the counter as pid 1 of its own pid
#              namespace, its own session, in a pod network namespace plugged into a bridge; per
#              move `criu dump --tcp-established --network-lock nftables` in the source
#              namespace, the address moved to a fresh namespace behind an nftables shield
#              (veth into the bridge, address, neighbour flush), `criu restore --tcp-established
#              --restore-detached` there, the shield lowered. Timed: dump start to restored.
# The two alternate move by move (cluster, then bare), so load from elsewhere hits both alike.
# Each side has one client (bench/podmotion/client.bash) holding ONE TCP connection for all its
# moves and asking "inc" every PODMOTION_BENCH_TICK_MS: every answer must be the previous one
# plus one (no reset, no lost memory), and after each move the script waits for an answer to a
# request sent after the move ended. Its longest wait for an answer during a move is the stall a
# client sees (the freeze, plus what follows it until the flows are handed over, plus TCP's
# retransmission back-off).
# Prints each move, p50 and p99 (nearest rank: of 20 moves, the 10th and the 20th smallest) of
# the freeze, the total and the bare move, the ratios PodMotion / bare, the goal "freeze p99 <=
# 250 ms" (PASS or MISS: reported, not asserted), and where the freeze window goes (medians of
# the intervals between the source agent's "checkpoint written", the PodMigration's phases as a
# `kubectl get --watch` stamps them, the restored Pod's creation (another watch), the destination
# kubelet's "pod admitted", "pod sandbox created" and "container restored", and the controller's
# audit log: when each call to an agent or to the API server returned).
# Moving a restored pod again needs the agent's `criu dump --skip-in-flight` (commit f5060b9):
# the counter serves one client at a time, so the copy's verification probe stays unaccepted in
# its listen queue, and without that option the next dump fails ("In-flight connection (l)").
# One line for other tools:
#   podmotion-bench: moves=N freeze_p50_ms=.. freeze_p99_ms=.. total_p50_ms=.. total_p99_ms=..
#     bare_p50_ms=.. bare_p99_ms=.. freeze_ratio_p50=.. freeze_ratio_p99=.. goal_ms=250 goal=PASS|MISS
# docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/podmotion/run.sh [BUILD]   BUILD holds `make all` and tests/criu-counter (default:
#                                    $GODWIT_BUILD, else build)
# Environment (all optional):
#   PODMOTION_BENCH_MOVES=20      moves on each side (PodMigrations, bare moves)
#   PODMOTION_BENCH_TICK_MS=50    the clients' pause between two requests
#   PODMOTION_BENCH_VERIFICATION=ReadinessProbe  the PodMigrations' verification.mode
#                                 (ReadinessProbe, TCPSocket or None)
#   PODMOTION_BENCH_LOG_LEVEL=info  the cluster's log level (the breakdown needs info or debug;
#                                 debug adds every reconcile's duration to controller.log)
#   PODMOTION_BENCH_KEEP=0        1: leave the work directory (the cluster's logs, the watches,
#                                 the clients' logs, criu's logs)
#   GODWIT_CRIU                   the criu binary (default /opt/godwit/criu/bin/criu, make deps)
# As root (network namespaces, CRIU). Exits non-zero when the benchmark itself breaks (a command
# failing, a migration not completing, a connection reset, a counter that does not go on),
# never because the goal is missed. Everything it starts is stopped, its namespaces deleted and
# its directory removed on exit (also on Ctrl-C; the cluster and the namespaces by watchdogs if
# the script is killed outright). Well under a minute when the machine is idle.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${GODWIT_BUILD:-build}}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
moves=${PODMOTION_BENCH_MOVES:-20}
tick=${PODMOTION_BENCH_TICK_MS:-50}
level=${PODMOTION_BENCH_LOG_LEVEL:-info}
keep=${PODMOTION_BENCH_KEEP:-0}
verification=${PODMOTION_BENCH_VERIFICATION:-ReadinessProbe}
CRIU=${GODWIT_CRIU:-/opt/godwit/criu/bin/criu}
GOAL_MS=250
POD_IP=10.244.1.10 # the bare side's pod network (inside its own namespaces only)
NET_IP=10.244.1.1
SHIELD='inet godwit_shield'
NS=gwpb$$ # the bare side's namespaces: gwpb<pid>-net, gwpb<pid>-p<k>

die() { echo "bench-podmotion: $*" >&2; exit 1; }
now_us() { echo $(($(date +%s%N) / 1000)); }
# ms A_US B_US: B - A in milliseconds, one decimal
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) / 1000 }'; }
# pct FILE Q: the nearest-rank Q-quantile (0 < Q <= 1) of the numbers in FILE, one a line
pct() {
  sort -n "$1" | awk -v q="$2" '{ v[NR] = $1 }
    END { if (!NR) { print "-"; exit } r = int(q * NR); if (r < q * NR) r++; if (r < 1) r = 1; print v[r] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "-" }'; }

case $moves in '' | *[!0-9]* | 0*) die "PODMOTION_BENCH_MOVES must be a positive integer, got '$moves'" ;; esac
case $tick in '' | *[!0-9]* | 0*) die "PODMOTION_BENCH_TICK_MS must be a positive integer, got '$tick'" ;; esac
case $verification in None | ReadinessProbe | TCPSocket) ;; *) die "PODMOTION_BENCH_VERIFICATION must be None, ReadinessProbe or TCPSocket, got '$verification'" ;; esac
[ "$(id -u)" = 0 ] || die "runs as root (network namespaces, CRIU)"
for c in kubectl curl bash ip nft nsenter unshare setsid ss; do
  command -v "$c" >/dev/null 2>&1 || die "$c is not installed: run 'make deps'"
done
[ -x "$CRIU" ] || die "no CRIU at $CRIU: run 'make deps' (tests/criu/install.sh)"
criu_version=$("$CRIU" --version 2>/dev/null | sed -n 's/^Version: //p')
case $criu_version in
  4.[2-9]* | 4.[1-9][0-9]* | [5-9].*) ;;
  *) die "CRIU at $CRIU is '$criu_version'; 4.2 or later is needed on this kernel: run 'make deps'" ;;
esac
for b in godwit-apiserver godwit-webhook godwit-jobrunner godwit-controller godwit-nodeagent \
  godwit-certs godwit-yaml2json tests/criu-counter; do
  [ -x "$build/$b" ] ||
    die "$build/$b is missing: run 'make bench-podmotion' (or make BUILD=$build all $build/tests/criu-counter)"
done
counter_bin=$build/tests/criu-counter

work=$(mktemp -d /tmp/godwit-bench-podmotion-XXXXXX)
cluster=$work/cluster
bare=$work/bare
export KUBECONFIG="$cluster/kubeconfig"
cluster_up='' watchdog='' bg='' bare_ns='' wpid='' gpid=''
# drop_ns NAME: kills what runs in the network namespace (the bare counter, ours) and deletes it
drop_ns() {
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  ip netns del "$1" 2>/dev/null
}
cleanup() {
  set +e
  trap '' INT TERM # a second signal must not cut the clean-up short
  for p in $gpid $wpid; do kill "$p" 2>/dev/null; done
  touch "$work/client-cluster.stop" "$work/client-bare.stop" 2>/dev/null
  for p in $bg; do kill "$p" 2>/dev/null; done
  [ -n "$cluster_up" ] && "$ROOT/tests/localcluster/down" --dir "$cluster" >/dev/null 2>&1
  for n in $bare_ns; do drop_ns "$n"; done
  [ -n "$watchdog" ] && kill -KILL "$watchdog" 2>/dev/null
  if [ "$keep" = 1 ]; then echo "bench-podmotion: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# What an earlier run killed outright left: its namespaces (gwpb<its pid>-*).
for n in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep '^gwpb[0-9]*-'); do
  p=${n#gwpb}
  p=${p%%-*}
  kill -0 "$p" 2>/dev/null || drop_ns "$n"
done
# If this script is killed outright (no trap runs): the cluster stops by itself (up
# --parent-pid), and this watchdog deletes the bare side's namespaces and the directory.
(
  trap '' INT TERM HUP
  while kill -0 $$ 2>/dev/null; do sleep 1; done
  for n in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$NS-"); do drop_ns "$n"; done
  sleep 6 # the cluster's own watchdog runs down first (it kills after 5 s)
  [ "$keep" = 1 ] || rm -rf "$work"
) </dev/null >/dev/null 2>&1 &
watchdog=$!

ncpu=$(nproc)
echo "bench-podmotion: $moves PodMigrations (StopAndCopy) of the CRIU counter on the local cluster, node-a <-> node-b,"
echo "  against $moves bare criu dump + restore moves between network namespaces, alternating; one client connection each"
echo "machine: $ncpu CPUs, Linux $(uname -r), criu $criu_version, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the cluster: three worker nodes, their agents, the controller
t=$(now_us)
cluster_up=1
GODWIT_BUILD=$build "$ROOT/tests/localcluster/up" --dir "$cluster" --worker-nodes node-a,node-b,node-c \
  --with-controller --parent-pid $$ --log-level "$level" >"$work/up.log" 2>&1 ||
  { cat "$work/up.log" >&2; die "tests/localcluster/up failed"; }
echo "cluster: up in $(ms "$t" "$(now_us)") ms ($cluster)"

kc() { kubectl "$@" 2>>"$work/kubectl.err"; }
cat >"$work/counter.yaml" <<EOF
apiVersion: migration.podmotion.io/v1beta1
kind: MigrationPolicy
metadata: {name: counters, namespace: default}
spec:
  podSelector: {matchLabels: {app: counter}}
  allowedModes: [StopAndCopy]
  freezeBudget: 10s
---
apiVersion: v1
kind: Pod
metadata: {name: counter, namespace: default, labels: {app: counter}}
spec:
  nodeName: node-a
  restartPolicy: Never
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: godwit/criu-counter
    command: ["$counter_bin", "0.0.0.0", "7000"]
    ports: [{name: counter, containerPort: 7000}]
    readinessProbe: {tcpSocket: {port: counter}, periodSeconds: 1}
EOF
kc apply -f "$work/counter.yaml" >/dev/null || { cat "$work/kubectl.err" >&2; die "kubectl apply failed"; }
kc wait --for=condition=Ready pod/counter --timeout=30s >/dev/null ||
  { cat "$work/kubectl.err" >&2; die "the counter pod did not become Ready"; }
pod_ip=$(kc get pod counter -o jsonpath='{.status.podIP}')
case $pod_ip in 198.18.*) ;; *) die "the counter pod has no pod address: '$pod_ip'" ;; esac

# Two watches, each line stamped (epoch microseconds) as it arrives: the PodMigrations' phases
# and the Pods (when the restored one is created).
# stamp FIFO OUT: a bash loop that stamps the lines of FIFO into OUT
stamp() {
  bash -c 'while IFS= read -r l; do echo "${EPOCHREALTIME/./} $l"; done' <"$1" >"$2" &
  bg="$bg $!"
}
mkfifo "$work/pmig.fifo" "$work/pods.fifo"
stamp "$work/pmig.fifo" "$work/pmig.watch"
stamp "$work/pods.fifo" "$work/pods.watch"
kubectl get pmig --watch --no-headers \
  -o custom-columns=N:.metadata.name,P:.status.phase,RV:.metadata.resourceVersion \
  >"$work/pmig.fifo" 2>>"$work/kubectl.err" &
bg="$bg $!"
kubectl get pods --watch --no-headers \
  -o custom-columns=N:.metadata.name,NODE:.spec.nodeName,P:.status.phase \
  >"$work/pods.fifo" 2>>"$work/kubectl.err" &
bg="$bg $!"

# start_client SIDE IP [NETNS]: the client of a side, from NETNS (default: this machine's)
start_client() {
  : >"$work/client-$1.log"
  if [ -n "${3:-}" ]; then
    nsenter --net="/run/netns/$3" bash "$ROOT/bench/podmotion/client.bash" "$2" 7000 \
      "$work/client-$1.log" "$tick" "$work/client-$1.stop" </dev/null 2>"$work/client-$1.err" &
  else
    bash "$ROOT/bench/podmotion/client.bash" "$2" 7000 "$work/client-$1.log" "$tick" \
      "$work/client-$1.stop" </dev/null 2>"$work/client-$1.err" &
  fi
  bg="$bg $!"
  client_check "$1" 100 >/dev/null || die "the $1 side's client got no answer from $2:7000"
}
# client_check SIDE TRIES [AFTER_US]: waits (TRIES x 0.05 s) for an answer to a request the
# client of SIDE sent at or after AFTER_US (default: any); prints its value. Fails with the
# client's ERROR line, if any.
client_check() {
  i=0
  while [ "$i" -lt "$2" ]; do
    if grep -q ' ERROR ' "$work/client-$1.log"; then
      echo "bench-podmotion: the $1 side's client: $(grep ' ERROR ' "$work/client-$1.log" | cut -d' ' -f3-)" >&2
      cat "$work/client-$1.err" >&2
      return 1
    fi
    v=$(awk -v t="${3:-0}" '$3 ~ /^[0-9]+$/ && $1 >= t { print $3; exit }' "$work/client-$1.log")
    [ -n "$v" ] && { echo "$v"; return 0; }
    sleep 0.05
    i=$((i + 1))
  done
  return 1
}
# longest SIDE FROM_US TO_US: the longest wait (ms) of a request the client of SIDE sent between
# FROM_US and TO_US
longest() {
  awk -v a="$2" -v b="$3" '$3 ~ /^[0-9]+$/ && $1 >= a && $1 <= b && $2 - $1 > m { m = $2 - $1 }
    END { printf "%.0f\n", m / 1000 }' "$work/client-$1.log"
}

start_client cluster "$pod_ip"
echo "counter pod: $pod_ip on node-a, the client connected (tick ${tick} ms)"

# ---- the bare side: tests/cluster/test_criu_tcp.c's world
mkdir -p "$bare/pod"
chmod 700 "$bare"
bare_ns="$NS-net"
{
  ip netns add "$NS-net"
  ip -n "$NS-net" link set lo up
  ip -n "$NS-net" link add br0 type bridge
  ip -n "$NS-net" addr add "$NET_IP/24" dev br0
  ip -n "$NS-net" link set br0 up
} >>"$bare/commands.log" 2>&1 || die "the bare side's cluster network failed (see $bare/commands.log)"
# pod_ns K: a pod namespace with lo up (made before a move, outside the timed window, as the
# test's B is made before its move)
pod_ns() {
  bare_ns="$NS-p$1 $bare_ns"
  { ip netns add "$NS-p$1" && ip -n "$NS-p$1" link set lo up; } >>"$bare/commands.log" 2>&1
}
# plug K: the pod's eth0 in namespace K, a veth into the bridge, the pod's address, up
plug() {
  ip -n "$NS-net" link add "v$1" type veth peer name eth0 netns "$NS-p$1" &&
    ip -n "$NS-net" link set "v$1" master br0 up &&
    ip -n "$NS-p$1" addr add "$POD_IP/24" dev eth0 && ip -n "$NS-p$1" link set eth0 up
}
pod_ns 0 || die "ip netns add failed (see $bare/commands.log)"
plug 0 >>"$bare/commands.log" 2>&1 || die "the bare pod's network failed (see $bare/commands.log)"
# The pod: pid 1 of its own pid namespace, its own session (setsid does not fork: unshare's
# child leads no process group), in its own directory (criu's parasite mounts ./proc.crtools
# there), /dev/null as stdio, every other descriptor closed (make's jobserver pipes must not end
# up in the checkpoint).
(
  cd "$bare/pod" &&
    exec bash -c 'for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@"' \
      bash nsenter --net="/run/netns/$NS-p0" unshare --pid --fork setsid "$counter_bin" "$POD_IP" 7000
) </dev/null >/dev/null 2>&1 &
unshare_pid=$!
bare_pid=''
i=0
while [ "$i" -lt 100 ]; do
  bare_pid=$(tr -d ' ' <"/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null || true)
  [ -n "$bare_pid" ] && nsenter --net="/run/netns/$NS-p0" ss -Hltn 'sport = :7000' | grep -q . && break
  sleep 0.05
  i=$((i + 1))
done
[ "$i" -lt 100 ] || die "the bare counter did not start listening"
start_client bare "$POD_IP" "$NS-net"
echo "bare counter: $POD_IP in $NS-p0 (pid $bare_pid), the client connected from $NS-net"

# ---- the moves
: >"$work/cluster.rec"
: >"$work/bare.rec"
# cluster_move I: PodMigration mNN of $src_pod from $from to $to
cluster_move() {
  name=$(printf 'm%02d' "$1")
  t0=$(now_us)
  kc create -f - >/dev/null <<EOF || { cat "$work/kubectl.err" >&2; die "$name: kubectl create failed"; }
apiVersion: migration.podmotion.io/v1beta1
kind: PodMigration
metadata: {name: $name, namespace: default}
spec:
  source: {podName: $src_pod}
  destination: {nodeName: $to}
  strategy: {type: StopAndCopy}
  verification: {mode: $verification}
EOF
  # kubectl wait, timed; beside it a guard ends it as soon as the watch shows the migration
  # ended otherwise (Failed, Cancelled), so a broken run stops at once
  kc wait --for=condition=Complete "pmig/$name" --timeout=30s >/dev/null &
  wpid=$!
  (
    while kill -0 "$wpid" 2>/dev/null; do
      if grep -Eq "^[0-9]+ $name +(Failed|Cancelled) " "$work/pmig.watch" 2>/dev/null; then kill "$wpid"; exit 0; fi
      sleep 0.1
    done
  ) &
  gpid=$!
  rc=0
  wait "$wpid" || rc=$?
  t1=$(now_us)
  kill "$gpid" 2>/dev/null || true
  wpid='' gpid=''
  if [ "$rc" != 0 ]; then
    why=$(kc get pmig "$name" -o jsonpath='{.status.phase}: {.status.conditions[?(@.type=="Complete")].message}')
    die "$name: did not complete: ${why:-no status (30 s)}"
  fi
  info=$(kc get pmig "$name" -o jsonpath='{.status.phase}|{.status.destinationNode}|{.status.destinationPodName}|{.status.freezeDuration}|{.status.conditions[?(@.type=="Checkpointing")].message}|{.status.conditions[?(@.type=="Transferring")].message}')
  IFS='|' read -r phase dnode dpod freeze cmsg tmsg <<EOF
$info
EOF
  if [ "$phase" != Completed ] || [ "$dnode" != "$to" ] || [ -z "$dpod" ]; then
    die "$name: phase '$phase', destination node '$dnode', restored pod '$dpod' (expected Completed on $to)"
  fi
  case $freeze in *[0-9]ms) freeze=${freeze%ms} ;; *) die "$name: status.freezeDuration is '$freeze'" ;; esac
  case $freeze in *[!0-9]*) die "$name: status.freezeDuration is '${freeze}ms'" ;; esac
  dump=$(echo "$cmsg" | sed -n 's/.*dumped in \([0-9]*\) ms.*/\1/p')
  xfer=$(echo "$tmsg" | sed -n 's/.*copied in \([0-9]*\) ms.*/\1/p')
  v=$(client_check cluster 200 "$t1") || die "$name: the client got no answer after the move"
  wait_ms=$(longest cluster "$t0" "$t1")
  total=$(ms "$t0" "$t1")
  echo "$name $from $to $src_pod $dpod $t0 $t1 $freeze $total ${dump:--} ${xfer:--} $wait_ms $v" >>"$work/cluster.rec"
  printf '  %s  %s -> %s  freeze %4s ms  total %6s ms  (dump %s ms, transfer %s ms)  longest request wait %4s ms  counter %s\n' \
    "$name" "$from" "$to" "$freeze" "$total" "${dump:--}" "${xfer:--}" "$wait_ms" "$v"
  # the source pod gone before the next move (grace 1 s), so no move overlaps the last one's
  # clean-up
  kc wait --for=delete "pod/$src_pod" --timeout=30s >/dev/null 2>&1 || die "$name: the source pod $src_pod was not deleted"
  src_pod=$dpod
  if [ "$from" = node-a ]; then from=node-b to=node-a; else from=node-a to=node-b; fi
}

# bare_move K: the counter from namespace p(K-1) to pK
bare_move() {
  s=$(($1 - 1))
  name=$(printf 'b%02d' "$1")
  pod_ns "$1" || die "$name: ip netns add failed (see $bare/commands.log)"
  img=$bare/img-$1
  mkdir -m 700 "$img"
  t0=$(now_us)
  nsenter --net="/run/netns/$NS-p$s" "$CRIU" dump -t "$bare_pid" -D "$img" -o "$img/dump.log" -v4 \
    --tcp-established --network-lock nftables >>"$bare/commands.log" 2>&1 ||
    { grep Error "$img/dump.log" | grep -v RLIMIT_NOFILE >&2; die "$name: criu dump failed ($img/dump.log)"; }
  t1=$(now_us)
  {
    ip -n "$NS-p$s" link del eth0 &&
      nsenter --net="/run/netns/$NS-p$1" nft "add table $SHIELD; add chain $SHIELD in { type filter hook input priority -400; }; add rule $SHIELD in ip daddr $POD_IP meta l4proto tcp drop; add chain $SHIELD out { type filter hook output priority -400; }; add rule $SHIELD out ip saddr $POD_IP meta l4proto tcp drop" &&
      plug "$1" && ip -n "$NS-net" neigh flush to "$POD_IP"
  } >>"$bare/commands.log" 2>&1 || die "$name: moving the address failed (see $bare/commands.log)"
  t2=$(now_us)
  nsenter --net="/run/netns/$NS-p$1" "$CRIU" restore -D "$img" -o "$img/restore.log" -v4 \
    --tcp-established --restore-detached --pidfile "$img/restored.pid" >>"$bare/commands.log" 2>&1 ||
    { grep Error "$img/restore.log" | grep -v 'RLIMIT_NOFILE\|Could not process rule' >&2; die "$name: criu restore failed ($img/restore.log)"; }
  t3=$(now_us)
  nsenter --net="/run/netns/$NS-p$1" nft "delete table $SHIELD" >>"$bare/commands.log" 2>&1 ||
    die "$name: lowering the shield failed"
  t4=$(now_us)
  bare_pid=$(cat "$img/restored.pid")
  v=$(client_check bare 200 "$t4") || die "$name: the client got no answer after the move"
  wait_ms=$(longest bare "$t0" "$t4")
  # the source namespace (criu's lock table is all that is left in it) goes
  drop_ns "$NS-p$s"
  echo "$name $(ms "$t0" "$t1") $(ms "$t1" "$t2") $(ms "$t2" "$t3") $(ms "$t0" "$t3") $wait_ms $v $(du -sk --exclude='*.log' "$img" | cut -f1)" >>"$work/bare.rec"
  printf '  %s  p%d -> p%d  dump start to restored %6s ms  (dump %s ms, address %s ms, restore %s ms)  longest request wait %4s ms  counter %s\n' \
    "$name" "$s" "$1" "$(ms "$t0" "$t3")" "$(ms "$t0" "$t1")" "$(ms "$t1" "$t2")" "$(ms "$t2" "$t3")" "$wait_ms" "$v"
}

echo
echo "moves (each PodMigration mNN followed by bare move bNN):"
src_pod=counter from=node-a to=node-b
k=1
while [ "$k" -le "$moves" ]; do
  cluster_move "$k"
  bare_move "$k"
  k=$((k + 1))
done

# ---- the clients end; their last answers
touch "$work/client-cluster.stop" "$work/client-bare.stop"
i=0
while [ "$i" -lt 40 ] && ! { grep -q ' END ' "$work/client-cluster.log" && grep -q ' END ' "$work/client-bare.log"; }; do
  sleep 0.05
  i=$((i + 1))
done
for side in cluster bare; do
  grep -q ' ERROR ' "$work/client-$side.log" && die "the $side side's client: $(grep ' ERROR ' "$work/client-$side.log")"
  grep -q ' END ' "$work/client-$side.log" || die "the $side side's client did not end"
done
n_cl=$(grep -c '^[0-9]* [0-9]* [0-9]*$' "$work/client-cluster.log")
n_ba=$(grep -c '^[0-9]* [0-9]* [0-9]*$' "$work/client-bare.log")
echo "clients: one connection each, no reset; the cluster's counter went $(awk 'NR == 1 { print $3 }' "$work/client-cluster.log") -> $(awk '$2 == "END" { print $3 }' "$work/client-cluster.log") ($n_cl answers), the bare one's $(awk 'NR == 1 { print $3 }' "$work/client-bare.log") -> $(awk '$2 == "END" { print $3 }' "$work/client-bare.log") ($n_ba answers), every answer the previous one plus one"

# ---- where the time goes: one line of instants (epoch ms) per PodMigration, from
#   the watches: the PodMigration seen (created) and each phase first seen written; the restored
#     Pod first seen (created); the source Pod first seen with a deletionTimestamp;
#   the source agent's log: "checkpoint written" (its end, and how long it took since the dump's
#     start: shield, criu dump --leave-running, manifest);
#   the destination kubelet's log: "pod admitted", "pod sandbox created", "container restored"
#     (and criu restore's own duration);
#   the controller's audit log (podmotion-audit.log): when each call to an agent or the API
#     server returned (checkpoint, transfer, create-restored-pod, probe passed, detach, attach,
#     delete-source-pod, the last remove-checkpoint).
{
  sed -n 's/^{"ts":"\([^"]*\)".*"msg":"checkpoint written","dir":"[^"]*\/default_\(m[0-9]*\)_[^"]*","ms":"\([0-9]*\)".*/\1 dumped \2 \3/p' \
    "$cluster"/nodeagent-*.log
  sed -n -e 's/^{"ts":"\([^"]*\)".*"msg":"pod admitted","pod":"\([^"]*\)".*/\1 admitted \2/p' \
    -e 's/^{"ts":"\([^"]*\)".*"msg":"pod sandbox created","pod":"\([^"]*\)".*/\1 sandbox \2/p' \
    -e 's/^{"ts":"\([^"]*\)".*"msg":"container restored","pod":"\([^"]*\)".*"criuMs":"\([0-9]*\)".*/\1 restored \2 \3/p' \
    "$cluster"/nodes/*/kubelet.log
  if [ -f "$cluster/podmotion-audit.log" ]; then
    sed -n 's/^{"ts":"\([^"]*\)","namespace":"default","migration":"\([^"]*\)",.*"action":"\([^"]*\)",.*"result":"success".*/\1 a-\3 \2/p' \
      "$cluster/podmotion-audit.log"
  fi
} >"$work/events"
# The timeline's fields (seg A B below takes them by number):
#  1 name          2 freezeDuration   3 created (watch)       4 Checkpointing (watch)
#  5 dump start    6 dump end (agent) 7 checkpoint returned   8 Transferring (watch)
#  9 transfer returned               10 Restoring (watch)    11 checkpoint named on the
#                                                               restored Pod (audit "restore")
# 12 restored Pod seen (pod watch)   13 admitted (kubelet)   14 sandbox created (kubelet)
# 15 restored (kubelet)             16 criu restore ms       17 Verifying (watch)
# 18 probe passed (audit)           19 detach returned       20 attach returned
# 21 delete-source-pod returned     22 last remove-checkpoint returned  23 Completed (watch)
awk '
  # "2026-12-02T08:26:41.452Z" -> epoch milliseconds (days from the civil date, UTC)
  function iso_ms(s,   y, mo, d, era, yoe, doy, doe) {
    y = substr(s, 1, 4) + 0; mo = substr(s, 6, 2) + 0; d = substr(s, 9, 2) + 0
    y -= (mo <= 2); era = int(y / 400); yoe = y - era * 400
    doy = int((153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5) + d - 1
    doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy
    return ((era * 146097 + doe - 719468) * 86400 + substr(s, 12, 2) * 3600 + substr(s, 15, 2) * 60 + substr(s, 18, 2)) * 1000 + substr(s, 21, 3)
  }
  function first(k, v) { if (!(k in T)) T[k] = v }
  function at(k) { return (k in T) ? sprintf("%.3f", T[k]) : "-" }
  FILENAME ~ /cluster.rec$/ { mig[++n] = $1; pod[$1] = $5; freeze[$1] = $8; next }
  FILENAME ~ /pmig.watch$/ { first("seen " $2, $1 / 1000); first($3 " " $2, $1 / 1000); next }
  FILENAME ~ /pods.watch$/ { first("pod " $2, $1 / 1000); next }
  { t = iso_ms($1) }
  $2 == "dumped" { first("dumpend " $3, t); first("dumpstart " $3, t - $4); next }
  $2 == "admitted" || $2 == "sandbox" { first($2 " " $3, t); next }
  $2 == "restored" { first("restored " $3, t); first("criu " $3, $4); next }
  $2 == "a-remove-checkpoint" { T[$2 " " $3] = t; next } # the last of the two nodes
  $2 ~ /^a-/ { first($2 " " $3, t); next }
  END {
    for (i = 1; i <= n; i++) {
      m = mig[i]; p = pod[m]
      print m, freeze[m], at("seen " m), at("Checkpointing " m), at("dumpstart " m), at("dumpend " m), \
        at("a-checkpoint " m), at("Transferring " m), at("a-transfer " m), at("Restoring " m), \
        at("a-restore " m), at("pod " p), at("admitted " p), at("sandbox " p), \
        at("restored " p), at("criu " p), at("Verifying " m), at("a-probe " m), at("a-detach " m), \
        at("a-attach " m), at("a-delete-source-pod " m), \
        at("a-remove-checkpoint " m), at("Completed " m)
    }
  }' "$work/cluster.rec" "$work/pmig.watch" "$work/pods.watch" "$work/events" >"$work/timeline"
# seg A B: the median over the moves of field B - field A of the timeline ("-" when no line has
# both); col A: the median of field A
seg() {
  awk -v a="$1" -v b="$2" '$a != "-" && $b != "-" { printf "%.1f\n", $b - $a }' "$work/timeline" >"$work/seg"
  if [ -s "$work/seg" ]; then pct "$work/seg" 0.5; else echo "-"; fi
}
col() {
  awk -v a="$1" '$a != "-" { printf "%.0f\n", $a }' "$work/timeline" >"$work/seg"
  if [ -s "$work/seg" ]; then pct "$work/seg" 0.5; else echo "-"; fi
}
row() { printf '  %-92s %7s\n' "$1" "$2"; }

# ---- the summary
cut -d' ' -f8 "$work/cluster.rec" >"$work/s-freeze"
cut -d' ' -f9 "$work/cluster.rec" >"$work/s-total"
cut -d' ' -f12 "$work/cluster.rec" >"$work/s-cwait"
awk '$11 != "-" { print $11 }' "$work/cluster.rec" >"$work/s-xfer"
cut -d' ' -f5 "$work/bare.rec" >"$work/s-bare"
cut -d' ' -f2 "$work/bare.rec" >"$work/s-bdump"
cut -d' ' -f3 "$work/bare.rec" >"$work/s-baddr"
cut -d' ' -f4 "$work/bare.rec" >"$work/s-brestore"
cut -d' ' -f6 "$work/bare.rec" >"$work/s-bwait"
awk '$3 != "-" && $23 != "-" { printf "%.1f\n", $23 - $3 }' "$work/timeline" >"$work/s-api"
awk '$5 != "-" && $20 != "-" { printf "%.1f\n", $20 - $5 }' "$work/timeline" >"$work/s-shielded"
f50=$(pct "$work/s-freeze" 0.5) f99=$(pct "$work/s-freeze" 0.99)
t50=$(pct "$work/s-total" 0.5) t99=$(pct "$work/s-total" 0.99)
b50=$(pct "$work/s-bare" 0.5) b99=$(pct "$work/s-bare" 0.99)
if [ "$f99" -le "$GOAL_MS" ]; then goal=PASS; else goal=MISS; fi
echo
echo "results over $moves moves each (p50, p99: nearest rank; of 20, the 10th and the 20th smallest), ms:"
line() { printf '  %-76s %8s %8s\n' "$1" "$2" "$3"; }
line "" p50 p99
line "PodMotion freeze window (status.freezeDuration)" "$f50" "$f99"
line "PodMotion total (kubectl create to kubectl wait --for=condition=Complete)" "$t50" "$t99"
line "  the same as the API server saw it (created to phase Completed, watch)" "$(pct "$work/s-api" 0.5)" "$(pct "$work/s-api" 0.99)"
line "  the flows held: dump start to attach returned (the copy's shield down)" "$(pct "$work/s-shielded" 0.5)" "$(pct "$work/s-shielded" 0.99)"
line "  the client's longest wait for an answer during a move" "$(pct "$work/s-cwait" 0.5)" "$(pct "$work/s-cwait" 0.99)"
line "bare criu dump + restore (dump start to restored)" "$b50" "$b99"
line "  criu dump" "$(pct "$work/s-bdump" 0.5)" "$(pct "$work/s-bdump" 0.99)"
line "  the address moved (ip and nft commands)" "$(pct "$work/s-baddr" 0.5)" "$(pct "$work/s-baddr" 0.99)"
line "  criu restore" "$(pct "$work/s-brestore" 0.5)" "$(pct "$work/s-brestore" 0.99)"
line "  the client's longest wait for an answer during a move" "$(pct "$work/s-bwait" 0.5)" "$(pct "$work/s-bwait" 0.99)"
fr50=$(ratio "$f50" "$b50") fr99=$(ratio "$f99" "$b99")
echo "ratios PodMotion / bare: freeze p50 $fr50, p99 $fr99; total p50 $(ratio "$t50" "$b50"), p99 $(ratio "$t99" "$b99")"
echo "goal: freeze p99 <= $GOAL_MS ms: $goal (p99 $f99 ms)"
cport=$(cat "$cluster/controller.port" 2>/dev/null || true)
if [ -n "$cport" ] && curl -sf "http://127.0.0.1:$cport/metrics" >"$work/metrics" 2>/dev/null; then
  awk '$1 == "godwit_podmigration_freeze_seconds_count" { c = $2 } $1 == "godwit_podmigration_freeze_seconds_sum" { s = $2 }
    END { if (c) printf "controller metric godwit_podmigration_freeze_seconds: %d observed, mean %.0f ms\n", c, s * 1000 / c }' "$work/metrics"
fi
echo
echo "where the freeze window goes (medians over the moves, ms; the agents', kubelets' and audit logs, the watches):"
row "source agent: shield raised, criu dump --leave-running, manifest (sha256)" "$(seg 5 6)"
row "its answer reaches the controller (checkpoint call returns)" "$(seg 6 7)"
row "controller: CheckpointComplete, phase Transferring written (watch)" "$(seg 7 8)"
row "controller: next reconcile, POST /v1/send returns (the agents' copy: $(pct "$work/s-xfer" 0.5))" "$(seg 8 9)"
row "controller: TransferComplete, phase Restoring written (watch)" "$(seg 9 10)"
row "controller: next reconcile, the checkpoint named on the restored Pod (patch returns)" "$(seg 10 11)"
row "destination kubelet: the Pod's update seen, container restored (criu restore itself: $(col 16))" "$(seg 11 15)"
row "= dump start to restored (each row is a median: they need not add up)" "$(seg 5 15)"
row "  status.freezeDuration (the same window from the agents' records)" "$f50"
echo "around it:"
row "created -> phase Checkpointing written (Pending, Validating)" "$(seg 3 4)"
row "phase Checkpointing written -> dump start (the restored Pod created, the checkpoint call reaches the agent)" "$(seg 4 5)"
row "the restored Pod seen -> admitted (kubelet; made before the dump ends)" "$(seg 12 13)"
row "admitted -> sandbox made (netns, the source's address and MAC, shields, link)" "$(seg 13 14)"
row "restored -> phase Verifying written (the Pod's status seen, both agents' state, freezeDuration)" "$(seg 15 17)"
row "phase Verifying -> probe passed (from inside the shielded copy)" "$(seg 17 18)"
row "probe passed -> detach returned (the source's link down)" "$(seg 18 19)"
row "detach -> attach returned (the copy's shield down: the flows are the copy's)" "$(seg 19 20)"
row "attach -> the source Pod deleted (TrafficVerified=True written and observed)" "$(seg 20 21)"
row "source Pod deleted -> checkpoints removed from both nodes" "$(seg 21 22)"
row "checkpoints removed -> phase Completed written (watch)" "$(seg 22 23)"
echo "podmotion-bench: moves=$moves freeze_p50_ms=$f50 freeze_p99_ms=$f99 total_p50_ms=$t50 total_p99_ms=$t99 bare_p50_ms=$b50 bare_p99_ms=$b99 freeze_ratio_p50=$fr50 freeze_ratio_p99=$fr99 goal_ms=$GOAL_MS goal=$goal"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
