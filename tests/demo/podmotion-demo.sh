#!/bin/bash
# The PodMotion demo (`make demo-podmotion`): a counter keeps counting while its pod moves. It
# starts the local cluster with three worker nodes and their node agents (`tests/localcluster/up
# --worker-nodes node-a,node-b,node-c --with-controller`, docs/dev/localcluster.md), runs the
# CRIU counter (tests/criu/counter.c: a TCP server whose count lives only in its memory) as a
# pod on node-a, and a client on this machine that holds ONE TCP connection to the pod's address
# and asks for the next number five times a second. Then two PodMigrations: node-a to node-b by
# name, and on to whichever node carries the label zone=c (nodeSelector). After each,
# `kubectl get pmig`, the conditions and Events, and the client's numbers: they go on, one by
# one, on the same connection, with no reset and no gap. Last, the audit log of every action on
# a pod or a node. Everything it started is stopped and removed when it ends, also on Ctrl-C.
#
#   tests/demo/podmotion-demo.sh [BUILD]      # BUILD defaults to build
#
# Every step checks itself; the first that fails stops the demo with a message, the
# PodMigration's description and the last lines of the controller's and agents' logs (exit 1).
# As root (network namespaces, CRIU from `make deps`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export GODWIT_BUILD=$BUILD
WORK=$(mktemp -d /tmp/godwit-podmotion-demo-XXXXXX)
chmod 755 "$WORK"
CLUSTER=$WORK/cluster
export KUBECONFIG=$CLUSTER/kubeconfig
CLIENT=''

cleanup() {
  set +e
  [ -n "$CLIENT" ] && kill "$CLIENT" 2>/dev/null
  wait 2>/dev/null
  "$ROOT/tests/localcluster/down" --dir "$CLUSTER" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; }
run() { show "$*"; "$@"; }
fail() {
  printf '\n\033[31mdemo failed: %s\033[0m\n' "$*" >&2
  kubectl describe pmig 2>/dev/null | tail -40 >&2 || true
  for f in controller nodeagent-node-a nodeagent-node-b; do
    echo "--- $f.log" >&2
    tail -n 8 "$CLUSTER/$f.log" >&2 2>/dev/null || true
  done
  exit 1
}

[ "$(id -u)" = 0 ] || fail "run it as root: pods get network namespaces and CRIU checkpoints them"
[ -x /opt/godwit/criu/bin/criu ] || fail "CRIU is missing: run make deps"
[ -x "$BUILD/tests/criu-counter" ] || fail "$BUILD/tests/criu-counter is not built"

say "The local cluster: three worker nodes, a node agent on each, the controller"
run "$ROOT/tests/localcluster/up" --dir "$CLUSTER" --require-mounts --worker-nodes node-a,node-b,node-c \
  --with-controller >/dev/null || fail "the local cluster did not start"
run kubectl label node node-c zone=c >/dev/null
run kubectl get nodes -L zone

say "The counter on node-a, and the policy that lets it move"
cat > "$WORK/counter.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: counter
  labels: {app: counter}
spec:
  nodeName: node-a
  automountServiceAccountToken: false   # nothing mounted: CRIU checkpoints it whole
  terminationGracePeriodSeconds: 1
  containers:
  - name: counter
    image: godwit/criu-counter           # the local cluster runs the command on the node
    command: [$BUILD/tests/criu-counter, 0.0.0.0, "7000"]
    ports: [{name: counter, containerPort: 7000}]
    readinessProbe: {tcpSocket: {port: counter}}
---
apiVersion: migration.podmotion.io/v1beta1
kind: MigrationPolicy
metadata: {name: counters}
spec:
  podSelector: {matchLabels: {app: counter}}
  allowedModes: [PreCopy, StopAndCopy]
  freezeBudget: 2s
EOF
run kubectl apply -f "$WORK/counter.yaml"
run kubectl wait --for=condition=Ready pod/counter --timeout=30s >/dev/null || fail "no counter"
IP=$(kubectl get pod counter -o jsonpath='{.status.podIP}')
run kubectl get pod counter -o wide

say "A client on this machine holds one connection to $IP:7000 and counts"
(
  exec 3<>"/dev/tcp/$IP/7000" || { echo "connect failed" > "$WORK/client.err"; exit 1; }
  while :; do
    echo inc >&3 || { echo "write failed" > "$WORK/client.err"; exit 1; }
    if ! read -t 10 -r v <&3; then echo "no answer" > "$WORK/client.err"; exit 1; fi
    echo "$(date +%T.%N | cut -c1-12) $v"
    sleep 0.2
  done
) > "$WORK/client.log" 2>&1 &
CLIENT=$!
sleep 1.5
tail -n 3 "$WORK/client.log"

# PodMigration NAME POD DESTINATION-YAML: applies it, waits for Complete, shows it
move() {
  cat > "$WORK/$1.yaml" <<EOF
apiVersion: migration.podmotion.io/v1beta1
kind: PodMigration
metadata: {name: $1}
spec:
  source: {podName: $2}
  destination: $3
EOF
  run kubectl apply -f "$WORK/$1.yaml"
  run kubectl wait --for=condition=Complete "pmig/$1" --timeout=60s >/dev/null \
    || fail "$1 did not complete"
  run kubectl get pmig "$1"
  show "kubectl get pmig $1 -o jsonpath='{range .status.conditions[*]}...'"
  kubectl get pmig "$1" -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}){"\n"}{end}'
  run kubectl get events --field-selector "involvedObject.name=$1" \
    -o custom-columns=REASON:.reason,MESSAGE:.message
  [ ! -s "$WORK/client.err" ] || fail "the client: $(cat "$WORK/client.err")"
  sleep 1
  echo "the client, around the move:"
  tail -n 8 "$WORK/client.log"
}

say "Move it to node-b"
move to-b counter "{nodeName: node-b}"
B=$(kubectl get pmig to-b -o jsonpath='{.status.destinationPodName}')
run kubectl get pods -o wide

say "And on to the node labelled zone=c"
move to-c "$B" "{nodeSelector: {zone: c}}"
run kubectl get pods -o wide

say "The client's numbers: one connection, no reset, no gap"
kill "$CLIENT" 2>/dev/null || true
wait "$CLIENT" 2>/dev/null || true
CLIENT=''
[ ! -s "$WORK/client.err" ] || fail "the client: $(cat "$WORK/client.err")"
N=$(wc -l < "$WORK/client.log")
awk 'BEGIN { want = 1 } { if ($2 != want) { print "gap at " NR ": " $2 " after " want - 1; exit 1 } want++ }' \
  "$WORK/client.log" || fail "the count was not continuous"
echo "$N answers, 1 to $N, in order, on the same connection"

say "The audit log: every action on a pod or a node"
cut -c1-200 "$CLUSTER/podmotion-audit.log"

say "Done: the counter moved twice and never stopped counting"
