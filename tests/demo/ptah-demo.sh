#!/bin/bash
# The Ptah demo (`make demo-ptah`): a PtahMigration driven by the real controller, from apply to
# Ready, then an uncertain run settled by a person. It starts the local cluster (API server,
# webhook with an admission policy whose approvers are the group db-approvers, job runner,
# controller; see docs/dev/localcluster.md) and a PostgreSQL 15 server on loopback, creates the
# database "shop" and its Secret, and then, as bob (`kubectl --context bob`), a ConfigMap of
# three versions and a PtahMigration; waits for Ready with `kubectl wait` and shows the printer
# columns, the Events, the history table and the runner's PtahResultRecord. Then bob publishes
# a fourth version and its run is killed in the middle of it (SIGKILL to the runner container):
# the PtahMigration goes Uncertain and plans nothing. bob may not settle it (not an approver);
# alice reads the history table with psql and settles it with a PtahMigrationRunAcknowledgment
# (`kubectl --context alice create -f`), after which the version is applied, once.
# Then a PtahSchema, in a second database "catalog" (its role has CREATEDB, for the plan engine's
# scratch database): bob applies the desired schema of one table (inline SQL); the plan waits
# for an approval (`kubectl get ptahschemas`, `kubectl godwit plan ptahschema products`, with
# plugin/ on PATH); bob's approval of his own plan is refused by the webhook; alice approves
# (`kubectl godwit approve ptahschema products`) and the table lands (`kubectl wait
# --for=condition=Ready`, psql, the Events). bob adds a column: a new plan; alice's approval of
# the old digest goes Stale (Event ApprovalStale on it); her approval of the new one lands it.
# Everything it started is stopped and removed when it ends, also on Ctrl-C.
#
#   tests/demo/ptah-demo.sh [BUILD]      # BUILD defaults to build
#
# Every step checks itself; the first that fails stops the demo with a message, the
# PtahMigration's (or PtahSchema's) description, its runner Pods' logs and the last lines of the
# controller's, job runner's and webhook's logs (exit 1). Walkthrough of the same steps:
# docs/walkthrough-ptah.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
export GODWIT_BUILD=$BUILD
WORK=$(mktemp -d /tmp/godwit-ptah-demo-XXXXXX)
chmod 755 "$WORK"
export KUBECONFIG=$WORK/cluster/kubeconfig
WATCH='' PG_UP='' SCHEMA_PART=''

cleanup() {
  set +e
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
  wait 2>/dev/null
  "$ROOT/tests/localcluster/down" --dir "$WORK/cluster" >/dev/null 2>&1
  cd /
  [ -n "$PG_UP" ] && "$ROOT/tests/pg/pgserver.sh" stop "$WORK/pg"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Prints a command line as one would type it (arguments with spaces or shell characters quoted).
show() {
  local a out=''
  for a; do
    case $a in *[[:space:]\"\'\\\{\}\(\)\$\*\?\;\|\&\<\>\[]*) a="'${a//\'/\'\\\'\'}'" ;; esac
    out+="${out:+ }$a"
  done
  printf '\033[2m$ %s\033[0m\n' "$out"
}
run() { show "$@"; "$@"; }
die() {
  echo "demo: $*" >&2
  for f in controller jobrunner webhook; do
    [ -s "$WORK/cluster/$f.log" ] && { echo "--- $f.log (last lines)" >&2; tail -n 20 "$WORK/cluster/$f.log" >&2; }
  done
  echo "--- the runner Pods' logs (last lines)" >&2
  if [ -z "$SCHEMA_PART" ]; then
    kubectl logs -l ptah.run/migration=shop --prefix --tail=15 >&2 2>/dev/null || true
    kubectl describe ptahmigration shop >&2 2>/dev/null || true
  else
    kubectl logs -l ptah.run/schema=products --prefix --tail=15 >&2 2>/dev/null || true
    kubectl describe ptahschema products >&2 2>/dev/null || true
    kubectl get ptahschemaapprovals -o wide >&2 2>/dev/null || true
  fi
  exit 1
}

# A PostgreSQL server on a free loopback port (tries a few random ports).
pg_up() {
  local dir=$1 port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % 30000 ))
    rm -rf "$dir"
    if "$ROOT/tests/pg/pgserver.sh" start "$dir" "$port" >/dev/null 2>"$WORK/pg.err"; then
      echo "$port"
      return 0
    fi
  done
  cat "$WORK/pg.err" >&2
  return 1
}
# psql over the server's unix socket, as the PostgreSQL role $1 (trusted locally), to the
# database $DB.
DB=shop
sql() {
  local role=$1
  shift
  psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/pg/sock" -p "$PG_PORT" -U "$role" -d "$DB" "$@"
}
# Shows and runs one query as role $1 (the socket and port left out of what is shown).
runsql() {
  show psql -U "$1" -d "$DB" -c "$2"
  sql "$1" -c "$2"
}
# What the demo reads of the PtahMigration, with kubectl's jsonpath.
pm() { kubectl get ptahmigration shop -o jsonpath="$1" 2>/dev/null || true; }
ready() { pm '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}'; }
# "<type> <reason>" of every Event of the PtahMigration, one a line.
events() {
  kubectl get events --field-selector involvedObject.kind=PtahMigration,involvedObject.name=shop \
    -o jsonpath='{range .items[*]}{.type} {.reason}{"\n"}{end}' 2>/dev/null || true
}
has_event() {
  local ev
  ev=$(events)
  grep -qx "$1 $2" <<<"$ev" || die "no $1 Event $2 on the PtahMigration"
  echo "ok: a $1 Event $2"
}
# The versions the history table records, in order, comma-separated.
history() { sql postgres -tAc "SELECT string_agg(version::text, ',' ORDER BY version) FROM public.ptah_migrations"; }
# Shows `kubectl wait --for=condition=Ready` and runs it, for at most $1 seconds; stops at once
# when the PtahMigration fails or its run turns uncertain instead.
wait_ready() {
  local w phase
  run kubectl wait --for=condition=Ready ptahmigration/shop --timeout="$1s" &
  w=$!
  while kill -0 "$w" 2>/dev/null; do
    phase=$(pm '{.status.phase}')
    case $phase in
      Failed|Uncertain)
        kill "$w" 2>/dev/null; wait "$w" 2>/dev/null || true
        die "the PtahMigration is $phase: $(pm '{.status.conditions[?(@.type=="Ready")].message}')" ;;
    esac
    sleep 0.2
  done
  wait "$w" || die "the PtahMigration did not become Ready within $1 s"
}
# Waits at most $2 seconds for the PtahMigration's phase to be $1; stops at once on a phase that
# ends a run otherwise (Failed, or UpToDate when another is awaited).
wait_phase() {
  local i=0 limit=$(( $2 * 5 )) phase
  while phase=$(pm '{.status.phase}'); [ "$phase" != "$1" ]; do
    case $phase in
      Failed|UpToDate) die "the PtahMigration is $phase, not $1: $(pm '{.status.conditions[?(@.type=="Ready")].message}')" ;;
    esac
    i=$((i + 1))
    [ $i -lt $limit ] || die "the PtahMigration did not reach phase $1 within $2 s (phase: $phase)"
    sleep 0.2
  done
}
# Waits at most $2 seconds for the PtahMigration to leave phase $1.
wait_left() {
  local i=0 limit=$(( $2 * 5 ))
  while [ "$(pm '{.status.phase}')" = "$1" ]; do
    i=$((i + 1))
    [ $i -lt $limit ] || die "the PtahMigration is still $1 after $2 s"
    sleep 0.2
  done
}
expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || die "$1 is \"$2\", expected \"$3\""
  echo "ok: $1 is ${3:-empty}"
}

START=$SECONDS
cd "$WORK"
say "starting the local cluster: API server, godwit-webhook, job runner, godwit-controller"
# The cluster admin's admission policy: only the group db-approvers (alice) may approve plans
# and settle uncertain runs (docs/operations/policy.md).
cat >policy.json <<'EOF'
{"apiVersion": "godwit.dev/v1", "kind": "AdmissionPolicy",
 "approvals": {"approvers": {"groups": ["db-approvers"]}}}
EOF
"$ROOT/tests/localcluster/up" --dir "$WORK/cluster" --with-controller --log-level warn --require-mounts \
  --policy "$WORK/policy.json" >up.log 2>&1 || { cat up.log; die "the local cluster did not start"; }
kubectl version 2>/dev/null | grep -E '^(Client|Server) Version' || true
echo "the admission policy's approvers: the group db-approvers (alice is in it, bob is not)"

say "starting PostgreSQL 15 on loopback, with the database \"shop\" and its role"
PG_PORT=$(pg_up "$WORK/pg") || die "the PostgreSQL server did not start"
PG_UP=1
DB_PW=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/pg/sock" -p "$PG_PORT" -U postgres -d postgres <<EOF
CREATE ROLE shop_app LOGIN PASSWORD '$DB_PW';
CREATE DATABASE shop OWNER shop_app;
CREATE ROLE alice LOGIN IN ROLE pg_read_all_data;
EOF
echo "PostgreSQL $(sql postgres -tAc 'SHOW server_version' | cut -d' ' -f1) on 127.0.0.1:$PG_PORT:" \
  "the role shop_app owns the database shop; alice may read it"

say "the connection goes into a Secret (only runner Pods read it; never a log, an Event or a status)"
run kubectl create secret generic shop-db \
  --from-literal=uri="postgres://shop_app:$DB_PW@127.0.0.1:$PG_PORT/shop" -o name

say "bob's release: three versions in a ConfigMap, one key per version (<version>_<description>.sql)"
mkdir migrations
cat >migrations/0001_create_customers.sql <<'EOF'
CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL UNIQUE);
EOF
cat >migrations/0002_create_orders.sql <<'EOF'
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers,
  amount numeric(10,2) NOT NULL, placed_at timestamptz NOT NULL DEFAULT now());
EOF
cat >migrations/0003_seed_customers.sql <<'EOF'
INSERT INTO customers VALUES (1, 'ada@example.com'), (2, 'grace@example.com');
EOF
# publish: the ConfigMap of every file in migrations/, applied as bob
publish() {
  printf '\033[2m$ %s\033[0m\n' "kubectl create configmap shop-migrations --from-file=migrations/ --dry-run=client -o yaml > shop-migrations.yaml"
  kubectl create configmap shop-migrations --from-file=migrations/ --dry-run=client -o yaml >shop-migrations.yaml
  run kubectl --context bob apply -f shop-migrations.yaml
}
run ls migrations
publish

cat >shop.yaml <<'EOF'
apiVersion: ptah.run/v1
kind: PtahMigration
metadata:
  name: shop
spec:
  database:
    connectionSecretRef: {name: shop-db}        # key "uri"
  migrations:
    configMapRef: {name: shop-migrations}       # no targetVersion: the highest version in it
EOF
say "bob applies a PtahMigration: the versions are applied in order, each in its own transaction"
cat shop.yaml
run kubectl --context bob apply -f shop.yaml
wait_ready 60

say "Ready: the database is at the latest version of the ConfigMap"
run kubectl get ptahmigrations -o wide
run kubectl get ptahmigration shop -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
run kubectl get events --field-selector involvedObject.kind=PtahMigration,involvedObject.name=shop
say "what the runner did (the Job's log), and the history table: one row per version, with the checksum of its text"
run kubectl logs job/shop-apply-1-1
runsql postgres "SELECT version, description, left(checksum, 19) || '...' AS checksum, operation, applied_by FROM public.ptah_migrations ORDER BY version"
say "the runner Pod delivered its result as a PtahResultRecord; the controller checked its writer before accepting it"
run kubectl get ptahresultrecords
run kubectl get ptahresultrecord shop-apply-1-1 -o jsonpath='{.status.phase}: {.spec.writer.podName} ({.spec.writer.serviceAccount}): {.spec.result.message}{"\n"}'

expect "phase" "$(pm '{.status.phase}')" UpToDate
expect "Ready" "$(ready)" True/Applied
expect "currentVersion" "$(pm '{.status.currentVersion}')" 3
expect "the history table's versions" "$(history)" 1,2,3
expect "PtahResultRecord shop-apply-1-1" \
  "$(kubectl get ptahresultrecord shop-apply-1-1 -o jsonpath='{.status.phase}')" Accepted
has_event Normal OperationStarted
has_event Normal MigrationRunFinished

say "bob's next release adds version 4, a slow one (pg_sleep(3) stands for a long index build)"
cat >migrations/0004_index_orders.sql <<'EOF'
SELECT pg_sleep(3);
CREATE INDEX orders_placed_at ON orders (placed_at);
ALTER TABLE customers ADD COLUMN name text;
EOF
run cat migrations/0004_index_orders.sql
kubectl get ptahmigrations -w &
WATCH=$!
publish

# The runner is inside version 4 once its session sleeps; then its container's process group
# (the Pod's containerID ends with the pid in the local cluster) is killed, as a node that dies
# or an OOM kill would.
i=0
until [ "$(sql postgres -tAc "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%' AND pid <> pg_backend_pid()")" -ge 1 ]; do
  i=$((i + 1))
  [ $i -lt 300 ] || die "the run never reached version 4"
  case $(pm '{.status.phase}') in Failed|Uncertain) die "the run of version 4 ended before it was killed";; esac
  sleep 0.1
done
pid=''
for i in 1 2 3 4 5 6 7 8 9 10; do
  cid=$(kubectl get pods -l ptah.run/operation=shop-apply-2 \
    -o jsonpath='{range .items[*].status.containerStatuses[?(@.state.running)]}{.containerID}{"\n"}{end}' | tail -n 1)
  pid=${cid##*-}
  case $pid in ''|*[!0-9]*) pid=''; sleep 0.1 ;; *) break ;; esac
done
[ -n "$pid" ] || die "no running runner container for operation shop-apply-2"
say "the runner is in the middle of version 4: its container is killed (SIGKILL to process group $pid)"
kill -KILL -- "-$pid" || die "cannot kill the runner's process group $pid"
wait_phase Uncertain 60
sleep 0.5
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null || true
WATCH=''

say "Uncertain: the run ended without saying what it committed, and nothing is planned until a person settles it"
run kubectl get pods -l ptah.run/operation=shop-apply-2
run kubectl logs job/shop-apply-2-1
run kubectl get ptahmigration shop -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}{"\n"}'
run kubectl get ptahmigration shop -o jsonpath='{.status.unresolvedRun}{"\n"}'
run kubectl get ptahmigration shop -o jsonpath='{.metadata.annotations.operator\.ptah\.run/unresolved-run}{"\n"}'
run kubectl get events --field-selector involvedObject.kind=PtahMigration,involvedObject.name=shop,type=Warning
OP=$(pm '{.status.unresolvedRun.operation}')
expect "phase" "$(pm '{.status.phase}')" Uncertain
expect "Ready" "$(ready)" False/RunUncertain
expect "status.unresolvedRun.operation" "$OP" shop-apply-2
expect "the unresolved-run annotation's operation" \
  "$(pm '{.metadata.annotations.operator\.ptah\.run/unresolved-run}' | grep -o '"operation":"[^"]*"')" \
  "\"operation\":\"$OP\""
has_event Warning MigrationRunFinished
has_event Warning MigrationRunUncertain
FROM=$(pm '{.status.unresolvedRun.fromVersion}') TO=$(pm '{.status.unresolvedRun.toVersion}')

ack() { # ack NAME OUTCOME COMMENT: an acknowledgment of the unresolved run
  cat <<EOF
apiVersion: ptah.run/v1
kind: PtahMigrationRunAcknowledgment
metadata:
  name: $1
spec:
  migrationRef: {name: shop}
  operation: $OP                 # status.unresolvedRun.operation
  outcome: $2
  comment: $3
EOF
}
say "bob may not settle it: only the admission policy's approvers may"
ack "$OP-bob" NotApplied "bob guesses" >ack-bob.yaml
show kubectl --context bob create -f ack-bob.yaml
if kubectl --context bob create -f ack-bob.yaml 2>ack-bob.err; then
  die "bob's acknowledgment was admitted, though bob is not an approver"
fi
cat ack-bob.err
grep -q 'is not among the admission policy' ack-bob.err || die "bob's acknowledgment was refused for another reason"
echo "ok: bob's acknowledgment was refused"

say "alice, an approver, looks at the database: the run was to take it from version $FROM to $TO"
runsql alice "SELECT version, description, applied_at FROM public.ptah_migrations ORDER BY version"
runsql alice "SELECT to_regclass('public.orders_placed_at') IS NOT NULL AS version_4_index_exists"
# What she finds: how many of the run's versions the history table records.
n=$(sql alice -tAc "SELECT count(*) FROM public.ptah_migrations WHERE version > $FROM AND version <= $TO")
if [ "$n" = 0 ]; then OUTCOME=NotApplied
elif [ "$n" = $((TO - FROM)) ]; then OUTCOME=Applied
else OUTCOME=Partial
fi
expect "what the killed run committed" "$OUTCOME" NotApplied

say "alice states what she found in a PtahMigrationRunAcknowledgment (the webhook stamps her name)"
ack "$OP-ack" "$OUTCOME" "version 4 is not in public.ptah_migrations and its index does not exist" \
  >ack.yaml
cat ack.yaml
run kubectl --context alice create -f ack.yaml
wait_left Uncertain 30 # the controller consumes the acknowledgment, then runs again
wait_ready 60

say "settled: the history table was read again and version 4 applied, once; Ready again"
run kubectl wait --for=jsonpath='{.status.currentVersion}'=4 ptahmigration/shop --timeout=10s ||
  die "currentVersion is not 4"
run kubectl get ptahmigrations
run kubectl get ptahmigrationrunacknowledgments -o wide
run kubectl get events --field-selector involvedObject.kind=PtahMigration,involvedObject.name=shop
runsql alice "SELECT version, description, operation FROM public.ptah_migrations ORDER BY version"

expect "phase" "$(pm '{.status.phase}')" UpToDate
expect "Ready" "$(ready)" True/Applied
expect "currentVersion" "$(pm '{.status.currentVersion}')" 4
expect "the history table's versions" "$(history)" 1,2,3,4
expect "acknowledgment $OP-ack" \
  "$(kubectl get ptahmigrationrunacknowledgment "$OP-ack" -o jsonpath='{.status.phase}')" Accepted
expect "its acknowledgedBy (stamped)" \
  "$(kubectl get ptahmigrationrunacknowledgment "$OP-ack" -o jsonpath='{.spec.acknowledgedBy}')" alice
expect "status.acknowledgment" \
  "$(pm '{.status.acknowledgment.acknowledgedBy} {.status.acknowledgment.outcome} {.status.acknowledgment.operation}')" \
  "alice $OUTCOME $OP"
expect "the unresolved-run annotation" "$(pm '{.metadata.annotations.operator\.ptah\.run/unresolved-run}')" ""
expect "the index of version 4" "$(sql postgres -tAc "SELECT to_regclass('public.orders_placed_at')")" orders_placed_at
has_event Normal UnresolvedRunAcknowledged

MIGRATION_TIME=$((SECONDS - START))

# ---- PtahSchema: bob writes the schema he wants, the controller plans, alice approves
SCHEMA_PART=1
DB=catalog
export PATH=$ROOT/plugin:$PATH # kubectl finds the plugin kubectl-godwit as `kubectl godwit`
SCHEMA_START=$SECONDS
# What the demo reads of the PtahSchema products, with kubectl's jsonpath.
psch() { kubectl get ptahschema products -o jsonpath="$1" 2>/dev/null || true; }
ps_ready() { psch '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}'; }
approval_phase() { kubectl get ptahschemaapproval "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true; }
# Waits at most $5 seconds for an Event of type $3 and reason $4 on the $1 named $2 (the
# controller records it right after the status write the demo waited for).
has_event_on() {
  local i=0 limit=$(( $5 * 5 ))
  until kubectl get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2" \
      -o jsonpath='{range .items[*]}{.type} {.reason}{"\n"}{end}' 2>/dev/null | grep -qx "$3 $4"; do
    i=$((i + 1))
    [ $i -lt $limit ] || die "no $3 Event $4 on the $1 $2 within $5 s"
    sleep 0.2
  done
  echo "ok: a $3 Event $4 on the $1 $2"
}
# Shows `kubectl wait --for=$1 ptahschema/products` and runs it, for at most $2 seconds; stops
# at once when the PtahSchema is Failed or Blocked instead.
ps_wait() {
  local w phase
  run kubectl wait --for="$1" ptahschema/products --timeout="$2s" &
  w=$!
  while kill -0 "$w" 2>/dev/null; do
    phase=$(psch '{.status.phase}')
    case $phase in
      Failed|Blocked)
        kill "$w" 2>/dev/null; wait "$w" 2>/dev/null || true
        die "the PtahSchema is $phase: $(psch '{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}')" ;;
    esac
    sleep 0.2
  done
  wait "$w" || die "the PtahSchema did not reach $1 within $2 s (phase: $(psch '{.status.phase}'))"
}
# Shows `kubectl wait` for the phase $2 of the PtahSchemaApproval $1, at most $3 seconds.
approval_wait() {
  run kubectl wait --for=jsonpath='{.status.phase}'="$2" "ptahschemaapproval/$1" --timeout="$3s" ||
    die "the PtahSchemaApproval $1 is not $2 after $3 s (phase: $(approval_phase "$1"))"
}
# The columns of public.products in the database catalog, comma-separated ("" without the table).
columns() {
  sql postgres -tAc "SELECT coalesce(string_agg(column_name, ',' ORDER BY ordinal_position), '')
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'products'"
}

say "PtahSchema: the schema bob wants, not the steps to it; a second database, \"catalog\", for it"
# A PtahSchema owns the whole schema of its database (a plan drops what the desired SQL leaves
# out), so it gets its own. Its role needs CREATEDB: the plan engine loads the desired SQL into a
# scratch database of its own to read its model, and drops it again.
DB_PW2=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/pg/sock" -p "$PG_PORT" -U postgres -d postgres <<EOF
CREATE ROLE catalog_app LOGIN CREATEDB PASSWORD '$DB_PW2';
CREATE DATABASE catalog OWNER catalog_app;
EOF
echo "the role catalog_app (CREATEDB, for the plan engine's scratch database) owns the database catalog"
run kubectl create secret generic catalog-db \
  --from-literal=uri="postgres://catalog_app:$DB_PW2@127.0.0.1:$PG_PORT/catalog" -o name

say "bob writes the desired schema of one table, inline SQL; approval: Required is the default"
schema_yaml() { # the PtahSchema products with the table's columns $1
  cat <<EOF
apiVersion: ptah.run/v1
kind: PtahSchema
metadata:
  name: products
spec:
  database:
    connectionSecretRef: {name: catalog-db}
  schema:
    sql: |
      CREATE TABLE public.products (
        id bigint PRIMARY KEY,
$1
      );
EOF
}
schema_yaml '        name text NOT NULL' >products.yaml
cat products.yaml
run kubectl --context bob apply -f products.yaml
ps_wait jsonpath='{.status.phase}'=AwaitingApproval 90

say "the plan: computed read-only against the live catalog, published by its digest, waiting for an approval"
run kubectl get ptahschemas -o wide
echo "the whole plan is in the Plan operation's PtahResultRecord; the plugin prints every statement:"
run kubectl godwit --context alice plan ptahschema products
DIGEST1=$(psch '{.status.plan.digest}')
RECORD1=$(psch '{.status.plan.record}')
run kubectl logs "job/$RECORD1"
run kubectl get ptahschema products -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
case $DIGEST1 in sha256:*) echo "ok: the plan's digest is $DIGEST1" ;; *) die "no plan digest: \"$DIGEST1\"" ;; esac
expect "status.plan.author" "$(psch '{.status.plan.author}')" bob
expect "status.plan.statements" "$(psch '{.status.plan.statements}')" 2
expect "Ready" "$(ps_ready)" False/ApprovalRequired
expect "PtahResultRecord $RECORD1" \
  "$(kubectl get ptahresultrecord "$RECORD1" -o jsonpath='{.status.phase}')" Accepted
expect "the columns of public.products (nothing applied yet)" "$(columns)" ""
has_event_on PtahSchema products Normal ApprovalRequired 10

say "bob approves his own plan: the webhook refuses it at once"
echo "(the plugin copies status.plan.author into the approval's spec.planAuthor, so the webhook can judge it)"
show kubectl godwit --context bob approve ptahschema products
if kubectl godwit --context bob approve ptahschema products >approve-bob.out 2>&1; then
  cat approve-bob.out
  die "bob's approval of his own plan was admitted"
fi
cat approve-bob.out
grep -q "forbids approving one's own plan" approve-bob.out ||
  die "bob's approval was refused, but not as a self-approval"
echo "(two reasons: bob is not an approver, and he wrote the plan; an approver who wrote a plan is refused for the second)"
run kubectl get ptahschemaapprovals
expect "phase" "$(psch '{.status.phase}')" AwaitingApproval
echo "ok: bob's approval was refused and nothing was created"

say "alice, an approver, has read the plan; she approves its digest"
show kubectl godwit --context alice approve ptahschema products --comment "one new table, no data touched"
out=$(kubectl godwit --context alice approve ptahschema products --comment "one new table, no data touched" 2>&1) ||
  { echo "$out"; die "alice's approval was not admitted"; }
echo "$out"
APPROVAL1=${out%% created*}
APPROVAL1=${APPROVAL1#ptahschemaapproval/}
ps_wait condition=Ready 90

say "Ready: the change landed"
run kubectl get ptahschemas
run kubectl get ptahschemaapprovals -o wide
run kubectl get events --field-selector involvedObject.kind=PtahSchema,involvedObject.name=products
runsql alice '\d public.products'
expect "phase" "$(psch '{.status.phase}')" Ready
expect "Ready" "$(ps_ready)" True/Applied
expect "status.applied.planDigest" "$(psch '{.status.applied.planDigest}')" "$DIGEST1"
expect "status.approval.approver" "$(psch '{.status.approval.approver}')" alice
expect "the columns of public.products" "$(columns)" id,name
approval_wait "$APPROVAL1" Applied 30
has_event_on PtahSchema products Normal ApprovalAccepted 10

say "bob adds a column: a new spec, a new plan, and a new approval needed"
schema_yaml '        name text NOT NULL,
        price numeric(10,2)' >products.yaml
run kubectl --context bob apply -f products.yaml
# The phase is Ready until the controller has claimed the new Plan: wait for a plan other
# than the applied one.
i=0
while DIGEST2=$(psch '{.status.plan.digest}'); [ "$DIGEST2" = "$DIGEST1" ] || [ -z "$DIGEST2" ]; do
  i=$((i + 1))
  [ $i -lt 450 ] || die "no new plan within 90 s (phase: $(psch '{.status.phase}'))"
  case $(psch '{.status.phase}') in Failed|Blocked) die "the PtahSchema is $(psch '{.status.phase}')" ;; esac
  sleep 0.2
done
ps_wait jsonpath='{.status.phase}'=AwaitingApproval 90
run kubectl get ptahschemas -o wide
run kubectl godwit --context alice plan ptahschema products
echo "ok: a new plan, $DIGEST2"
expect "status.plan.author" "$(psch '{.status.plan.author}')" bob
expect "status.plan.statements" "$(psch '{.status.plan.statements}')" 1

say "alice approves the digest she reviewed before, the first plan's: the approval is stale"
cat >approval-old.yaml <<EOF
apiVersion: ptah.run/v1
kind: PtahSchemaApproval
metadata:
  name: products-alice-old
spec:
  schemaRef: {name: products}
  planDigest: $DIGEST1
  planAuthor: bob
  comment: the plan I reviewed
EOF
cat approval-old.yaml
run kubectl --context alice create -f approval-old.yaml
approval_wait products-alice-old Stale 30
run kubectl get ptahschemaapprovals -o wide
run kubectl get ptahschemaapproval products-alice-old -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
has_event_on PtahSchemaApproval products-alice-old Warning ApprovalStale 10
run kubectl get events --field-selector involvedObject.kind=PtahSchemaApproval,involvedObject.name=products-alice-old
expect "phase" "$(psch '{.status.phase}')" AwaitingApproval
expect "the columns of public.products (the stale approval applied nothing)" "$(columns)" id,name

say "alice approves the plan that waits: the column lands"
show kubectl godwit --context alice approve ptahschema products --comment "adds a nullable column"
out=$(kubectl godwit --context alice approve ptahschema products --comment "adds a nullable column" 2>&1) ||
  { echo "$out"; die "alice's approval was not admitted"; }
echo "$out"
APPROVAL2=${out%% created*}
APPROVAL2=${APPROVAL2#ptahschemaapproval/}
ps_wait condition=Ready 90
run kubectl get ptahschemas -o wide
run kubectl get ptahschemaapprovals -o wide
runsql alice '\d public.products'
expect "phase" "$(psch '{.status.phase}')" Ready
expect "Ready" "$(ps_ready)" True/Applied
expect "status.applied.planDigest" "$(psch '{.status.applied.planDigest}')" "$DIGEST2"
expect "the columns of public.products" "$(columns)" id,name,price
approval_wait "$APPROVAL2" Applied 30
expect "the stale approval" "$(approval_phase products-alice-old)" Stale

say "done in $((SECONDS - START)) s (PtahMigration $MIGRATION_TIME s, PtahSchema $((SECONDS - SCHEMA_START)) s): the demo stops everything it started"
