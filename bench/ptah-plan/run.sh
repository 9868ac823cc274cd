#!/bin/bash
# The plan engine benchmark (make bench-ptah-plan, part of make bench; issue 10): the wall time
# and the peak memory of `godwit-runner ptah-plan` computing the plan of a 300-table desired
# schema with one changed column, against `pg_dump --schema-only` of the same database (the
# baseline), in one invocation, on one PostgreSQL 15 server:
#   baseline  `pg_dump --schema-only -d URI -f FILE` of the target (PostgreSQL 15's pg_dump):
#             what reading the same catalog and printing it as SQL costs;
#   plan      `godwit-runner ptah-plan --type Plan --result none` with the desired SQL, which is
#             the target's schema with one column widened: read the target's catalog, create a
#             scratch database, load the desired SQL into it, read it, diff, drop the scratch;
# N rounds, the two interleaved (the order alternates). Every plan is checked: exactly one
# statement, not destructive, altering the changed column. Prints the medians, the ratio
# plan/pg_dump (goal <= 3, reported, not asserted), the peak resident set and the CPU time of
# each (GNU time: the process's ru_maxrss, ru_utime + ru_stime), the CPU time the server spent
# meanwhile (its processes' /proc/PID/stat; autovacuum is off), and where a plan's time goes
# (its PASS lines, stamped as they arrive).
# One line for other tools:
#   ptah-plan-bench: tables=N objects=N pg_dump_s=S plan_s=S ratio=R pg_dump_rss_kib=K
#     plan_rss_kib=K pg_dump_server_cpu_s=S plan_server_cpu_s=S
# docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/ptah-plan/run.sh [BUILD]   BUILD holds godwit-runner (default: build)
# Environment (all optional):
#   PTAH_PLAN_BENCH_RUNS=5      rounds; each runs pg_dump and the plan once; medians reported
#   PTAH_PLAN_BENCH_TABLES=300  tables in the schema (at least 30)
#   PTAH_PLAN_BENCH_KEEP=0      1: leave the work directory (the SQL, the dumps, the plans, logs)
# Exits non-zero on a functional failure only (a command failing, a plan that is not the one
# expected), never because the goal is missed.
# Runs as any user; as root, PostgreSQL runs as the system user godwit-pg (tests/pg/pgserver.sh).
# The server is stopped and the directory removed on exit (also on Ctrl-C, and by a watchdog if
# the script itself is killed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$ROOT/$build ;; esac
runs=${PTAH_PLAN_BENCH_RUNS:-5}
tables=${PTAH_PLAN_BENCH_TABLES:-300}
PGBIN=/usr/lib/postgresql/15/bin
GTIME=/usr/bin/time
GOAL=3

die() { echo "bench-ptah-plan: $*" >&2; exit 1; }
for v in runs tables; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
if [ "$tables" -lt 30 ] || [ "$tables" -gt 9999 ]; then die "tables must be 30 to 9999, got $tables"; fi
command -v psql >/dev/null 2>&1 || die "psql is not installed: run 'make deps'"
for b in initdb pg_dump; do
  [ -x "$PGBIN/$b" ] || die "PostgreSQL 15 is not installed ($PGBIN): run 'make deps'"
done
"$GTIME" -f %M true >/dev/null 2>&1 || die "GNU time ($GTIME) is not installed: run 'make deps'"
[ -x "$build/godwit-runner" ] ||
  die "$build/godwit-runner is missing: run 'make bench-ptah-plan' (or make BUILD=$build $build/godwit-runner)"

work=$(mktemp -d /tmp/godwit-bench-ptah-plan-XXXXXX)
chmod 755 "$work" # the PostgreSQL server runs as godwit-pg when we are root
pg_up='' watchdog=''
cleanup() {
  set +e
  [ -n "$watchdog" ] && kill -KILL "$watchdog" 2>/dev/null
  [ -n "$pg_up" ] && "$ROOT/tests/pg/pgserver.sh" stop "$work/pg" >/dev/null 2>&1
  if [ "${PTAH_PLAN_BENCH_KEEP:-0}" = 1 ]; then echo "bench-ptah-plan: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# If this script is killed outright (no trap runs), the watchdog stops the server and removes
# the directory.
(
  set +e
  trap '' INT TERM HUP
  while kill -0 $$ 2>/dev/null; do sleep 1; done
  "$ROOT/tests/pg/pgserver.sh" stop "$work/pg"
  rm -rf "$work"
) </dev/null >/dev/null 2>&1 &
watchdog=$!
disown "$watchdog"

# shared: now, secs, median, port_free, bench_pg_up, bench_psql
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
list() { tr '\n' ' ' <"$1" | sed 's/ $//'; }
sql() { # DB [psql args...]: as the superuser over the server's unix socket
  local db=$1
  shift
  bench_psql "$work/pg" "$port" "$db" -At "$@"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "godwit plan engine benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $(uname -sr)"
echo "$("$PGBIN/postgres" --version), $("$PGBIN/pg_dump" --version), $("$build/godwit-runner" --version 2>/dev/null | head -n1)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ exit !($1 > 0.5) }' /proc/loadavg &&
  echo "bench-ptah-plan: the machine is not idle (load average above 0.5): wall times will be noisy" >&2

# ---- PostgreSQL 15 on a free loopback port; the role app (LOGIN CREATEDB) owns the target
pg_up=1
port=$(bench_pg_up "$work/pg") || die "PostgreSQL did not start"
app_pw=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
export PGPASSWORD=$app_pw # for psql and pg_dump over TCP (kept out of command lines)
sql postgres <<<"CREATE ROLE app LOGIN CREATEDB PASSWORD '$app_pw'" # on stdin: not on a command line
sql postgres -c "CREATE DATABASE target OWNER app" >/dev/null
uri=postgresql://app@127.0.0.1:$port/target
uri_pw=postgresql://app:$app_pw@127.0.0.1:$port/target

# ---- the schema: three schemas, five enum types, a sequence per tenth table, N tables of 5 to
# 8 columns (bigint identity, integer or sequence keys; varchar, text, numeric, timestamptz,
# boolean, jsonb, date, enum columns), a primary key each, a unique constraint on every fourth,
# a foreign key to an earlier table on every second, one index each and a second (on an
# expression, or partial on two columns) on every fifth, a view on every fifteenth table and a
# few on views, comments on every table, on two columns of every third and on the other kinds.
# The changed column: amount of a table in the middle (numeric(12,2) to numeric(16,2), a
# widening without rewrite).
schemas=(public sales stock)
enums=(status priority channel region tier)
sch() { echo "${schemas[$(($1 % 3))]}"; }
tn() { printf 't%04d' "$1"; }
qn() { echo "$(sch "$1").$(tn "$1")"; }
pk_type() { # the key's type of table I: bigint identity, integer with a sequence, or integer
  if [ $(($1 % 10)) = 0 ]; then echo integer; elif [ $(($1 % 2)) = 0 ]; then echo bigint; else echo integer; fi
}
changed=$((tables / 2 + 1))
[ $((changed % 15)) = 0 ] && changed=$((changed + 1)) # no view on it (a retyped column's views are rebuilt)
gen_schema() { # AMOUNT_TYPE_OF_CHANGED: the desired SQL on stdout
  local i j k e t amt
  echo "-- the plan engine benchmark's schema: $tables tables"
  echo "CREATE SCHEMA sales;"
  echo "CREATE SCHEMA stock;"
  echo "COMMENT ON SCHEMA sales IS 'orders and customers';"
  echo "CREATE TYPE public.status AS ENUM ('new', 'active', 'suspended', 'closed');"
  echo "CREATE TYPE public.priority AS ENUM ('low', 'normal', 'high', 'urgent');"
  echo "CREATE TYPE sales.channel AS ENUM ('web', 'store', 'phone', 'partner');"
  echo "CREATE TYPE sales.region AS ENUM ('north', 'south', 'east', 'west', 'abroad');"
  echo "CREATE TYPE stock.tier AS ENUM ('bronze', 'silver', 'gold');"
  echo "COMMENT ON TYPE public.status IS 'lifecycle of a row';"
  for ((i = 1; i <= tables; i++)); do
    t=$(qn "$i")
    if [ $((i % 10)) = 0 ]; then
      echo "CREATE SEQUENCE $(sch "$i").$(tn "$i")_id_seq AS integer START WITH 1000 INCREMENT BY 1 CACHE 1;"
    fi
    echo "CREATE TABLE $t ("
    if [ $((i % 10)) = 0 ]; then
      echo "  id integer NOT NULL DEFAULT nextval('$(sch "$i").$(tn "$i")_id_seq'::regclass),"
    elif [ $((i % 2)) = 0 ]; then
      echo "  id bigint GENERATED BY DEFAULT AS IDENTITY,"
    else
      echo "  id integer NOT NULL,"
    fi
    echo "  name varchar(100) NOT NULL,"
    amt='numeric(12,2)'
    [ "$i" = "$changed" ] && amt=$1
    echo "  amount $amt,"
    echo "  created_at timestamptz NOT NULL DEFAULT now(),"
    case $((i % 4)) in
      0) echo "  note text," ;;
      1) echo "  active boolean NOT NULL DEFAULT true," ;;
      2) echo "  payload jsonb NOT NULL DEFAULT '{}'::jsonb," ;;
      3) echo "  due date," ;;
    esac
    if [ $((i % 3)) = 0 ]; then
      e=${enums[$((i / 3 % 5))]}
      case $e in status | priority) e=public.$e ;; channel | region) e=sales.$e ;; *) e=stock.$e ;; esac
      echo "  kind $e,"
    fi
    [ $((i % 4)) = 0 ] && echo "  code varchar(32) NOT NULL,"
    if [ $((i % 2)) = 0 ] && [ "$i" -gt 7 ]; then
      j=$((i - 1 - i % 7))
      echo "  parent_id $(pk_type "$j"),"
    fi
    echo "  CONSTRAINT $(tn "$i")_pkey PRIMARY KEY (id)"
    echo ");"
    if [ $((i % 10)) = 0 ]; then
      echo "ALTER SEQUENCE $(sch "$i").$(tn "$i")_id_seq OWNED BY $t.id;"
    fi
    [ $((i % 4)) = 0 ] && echo "ALTER TABLE $t ADD CONSTRAINT $(tn "$i")_code_key UNIQUE (code);"
    if [ $((i % 2)) = 0 ] && [ "$i" -gt 7 ]; then
      j=$((i - 1 - i % 7))
      echo "ALTER TABLE $t ADD CONSTRAINT $(tn "$i")_parent_fkey FOREIGN KEY (parent_id) REFERENCES $(qn "$j") (id) ON DELETE CASCADE;"
      echo "CREATE INDEX $(tn "$i")_parent_idx ON $t (parent_id);"
    else
      echo "CREATE INDEX $(tn "$i")_created_idx ON $t (created_at);"
    fi
    if [ $((i % 5)) = 0 ]; then
      if [ $((i % 2)) = 0 ]; then
        echo "CREATE INDEX $(tn "$i")_name_idx ON $t (lower((name)::text));"
      else
        echo "CREATE INDEX $(tn "$i")_recent_idx ON $t (name, created_at DESC) WHERE amount > 0;"
      fi
    fi
    echo "COMMENT ON TABLE $t IS 'table $i of the benchmark';"
    if [ $((i % 3)) = 0 ]; then
      echo "COMMENT ON COLUMN $t.name IS 'display name';"
      echo "COMMENT ON COLUMN $t.amount IS 'in cents / 100';"
    fi
    if [ $((i % 15)) = 0 ]; then
      echo "CREATE VIEW $(sch "$i").v_$(tn "$i") AS SELECT id, name, created_at FROM $t WHERE created_at > '2020-01-01'::timestamptz;"
      echo "COMMENT ON VIEW $(sch "$i").v_$(tn "$i") IS 'recent rows of $(tn "$i")';"
      if [ $((i % 45)) = 0 ]; then
        k=$((i - 15))
        echo "CREATE VIEW $(sch "$i").v_$(tn "$i")_both AS SELECT a.id, a.name, b.name AS other FROM $(sch "$i").v_$(tn "$i") a JOIN $(sch "$k").v_$(tn "$k") b ON b.id = a.id;"
      fi
    fi
  done
  echo "CREATE SEQUENCE public.invoice_no AS bigint START WITH 100000 INCREMENT BY 10 CACHE 20;"
  echo "COMMENT ON SEQUENCE public.invoice_no IS 'invoice numbers';"
  echo "CREATE SEQUENCE sales.ticket_no;"
}
gen_schema 'numeric(12,2)' >"$work/current.sql"
gen_schema 'numeric(16,2)' >"$work/desired.sql"
[ "$(diff "$work/current.sql" "$work/desired.sql" | grep -c '^[<>]')" = 2 ] ||
  die "the desired SQL should differ from the current one in one line"
t=$(now)
psql -X -q -1 -v ON_ERROR_STOP=1 -d "$uri" -f "$work/current.sql" >"$work/load.log" 2>&1 ||
  { cat "$work/load.log" >&2; die "the schema does not load into the target"; }
echo "the schema: $(wc -l <"$work/desired.sql") lines, $(wc -c <"$work/desired.sql") bytes of SQL, loaded into the target in $(secs "$t" "$(now)") s"
sql target -c "ANALYZE" >/dev/null
# no autovacuum worker comes and goes during the rounds (the server CPU below counts every
# process of the server)
sql postgres -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null
counts=$(sql target -F' ' -c "
  SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_constraint o JOIN pg_namespace n ON n.oid = o.connamespace
            WHERE n.nspname IN ('public', 'sales', 'stock') AND o.contype IN ('p', 'u', 'f')),
         (SELECT count(*) FROM pg_constraint o JOIN pg_namespace n ON n.oid = o.connamespace
            WHERE n.nspname IN ('public', 'sales', 'stock') AND o.contype = 'f'),
         (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'i' AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'v' AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
            WHERE t.typtype = 'e' AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'S' AND n.nspname IN ('public', 'sales', 'stock')),
         (SELECT count(*) FROM pg_description d JOIN pg_class c ON c.oid = d.objoid
            AND d.classoid = 'pg_class'::regclass JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname IN ('public', 'sales', 'stock'))")
read -r n_tab n_col n_con n_fk n_idx n_view n_enum n_seq n_com <<<"$counts"
[ "$n_tab" = "$tables" ] || die "the target has $n_tab tables, not $tables"
echo "  $n_tab tables, $n_col columns, $n_con primary/unique/foreign key constraints ($n_fk foreign keys), $n_idx indexes (constraints' included), $n_view views, $n_enum enum types, $n_seq sequences (identity ones included), $n_com comments on relations and their columns"
echo "  the change: $(qn "$changed").amount numeric(12,2) -> numeric(16,2)"

# ---- the two sides, each under GNU time: "%M %U %S" in its .time file (the process's peak
# resident set in KiB, its user and system CPU seconds; ru_maxrss and ru_utime/ru_stime from
# wait4, so nothing is sampled)
dump_run() { # OUT LOG TIMEFILE
  "$GTIME" -f '%M %U %S' -o "$3" "$PGBIN/pg_dump" --schema-only -d "$uri" -f "$1" >"$2" 2>&1
}
plan_run() { # DESIRED OPERATION REPORT PLANOUT LOG TIMEFILE
  # its lines (stdout, flushed one by one) stamped with the epoch as they arrive
  GODWIT_DATABASE_URI=$uri_pw "$GTIME" -f '%M %U %S' -o "$6" "$build/godwit-runner" ptah-plan \
    --operation "$2" --owner-name bench --namespace default --job-name "$2" --desired "$1" \
    --plan-out "$4" --protocol 1 --result none --report "$3" 2>&1 |
    while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done >"$5"
}
# report_field REPORT KEY: a number (or null) of the runner's one-line JSON report
report_field() { sed -n "s/.*\"$2\":\([0-9a-z]*\).*/\1/p" "$1"; }
# usage TIMEFILE SIDE: the peak RSS (KiB) to SIDE_rss.times, the CPU seconds to SIDE_cpu.times
usage() {
  tail -n1 "$1" | awk -v r="$work/$2_rss.times" -v c="$work/$2_cpu.times" \
    '{ print $1 >>r; printf "%.2f\n", $2 + $3 >>c }'
}
last() { tail -n1 "$work/$1.times"; }
# server_cpu: the CPU seconds the server has used so far: the postmaster's own and its reaped
# children's (the backends that ended: utime, stime, cutime, cstime), and its live children's
# (checkpointer, background writer, ...), from /proc/PID/stat. Waits first (up to 2 s) until
# only the children it had at the start are left, so that the backend of a run just ended counts.
server_children() { { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" '
    { s = $0; sub(/^[0-9]+ \(.*\) /, "", s); split(s, f, " "); if (f[2] == pm) n++ } END { print n + 0 }'; }
server_cpu() {
  local i
  for ((i = 0; i < 40; i++)); do
    [ "$(server_children)" -le "$pm_children" ] && break
    sleep 0.05
  done
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" -v hz="$hz" '
    { s = $0; sub(/^[0-9]+ \(.*\) /, "", s); split(s, f, " ") } # f[k - 2] is field k
    $1 == pm { t += f[12] + f[13] + f[14] + f[15] }
    f[2] == pm { t += f[12] + f[13] }
    END { printf "%.2f\n", t / hz }'
}
pm=$(head -n1 "$work/pg/data/postmaster.pid")
hz=$(getconf CLK_TCK)
pm_children=99
for _ in 1 2 3 4 5; do # the fewest seen: the server's own processes, no backend
  n=$(server_children)
  [ "$n" -lt "$pm_children" ] && pm_children=$n
  sleep 0.1
done

# an untimed warm-up, and a check that the model round-trips: the current SQL plans to nothing
plan_run "$work/current.sql" bench-warmup "$work/warmup.json" "$work/warmup-plan.json" \
  "$work/warmup.log" "$work/warmup.time" ||
  { cat "$work/warmup.log" >&2; die "warm-up: godwit-runner ptah-plan failed"; }
n=$(report_field "$work/warmup.json" statements)
[ "$n" = 0 ] || { cat "$work/warmup.log" >&2; die "warm-up: the unchanged schema planned to '$n' statements, not 0"; }
dump_run "$work/warmup.sql" "$work/warmup-dump.log" "$work/warmup-dump.time" ||
  { cat "$work/warmup-dump.log" >&2; die "warm-up: pg_dump failed"; }
objects=$(sed -n "s/.*PASS catalog: read the target's catalog: \([0-9]*\) objects.*/\1/p" "$work/warmup.log")
echo "warm-up (untimed): the unchanged schema plans to no statement; the plan's model of the target: ${objects:-?} objects; the dump: $(wc -c <"$work/warmup.sql") bytes"
# what each process holds before any work (its binary and shared libraries): a runner that stops
# at its flags, a pg_dump --version
"$GTIME" -f %M -o "$work/idle-runner.time" "$build/godwit-runner" ptah-plan --protocol 1 \
  --report /dev/null >/dev/null 2>&1 || true
"$GTIME" -f %M -o "$work/idle-dump.time" "$PGBIN/pg_dump" --version >/dev/null
idle_runner=$(tail -n1 "$work/idle-runner.time")
idle_dump=$(tail -n1 "$work/idle-dump.time")

for f in dump plan dump_rss plan_rss dump_cpu plan_cpu dump_srv plan_srv; do : >"$work/$f.times"; done
: >"$work/split"
run_dump() {
  local r=$1 t0 t1 s0
  s0=$(server_cpu)
  t0=$(now)
  dump_run "$work/dump-$r.sql" "$work/dump-$r.log" "$work/dump-$r.time" ||
    { cat "$work/dump-$r.log" >&2; die "round $r: pg_dump failed"; }
  t1=$(now)
  awk -v a="$s0" -v b="$(server_cpu)" 'BEGIN { printf "%.2f\n", b - a }' >>"$work/dump_srv.times"
  grep -q "^CREATE TABLE $(qn "$tables") (" "$work/dump-$r.sql" ||
    die "round $r: the dump has no table $(qn "$tables")"
  secs "$t0" "$t1" >>"$work/dump.times"
  usage "$work/dump-$r.time" dump
  echo "  round $r: pg_dump --schema-only   $(last dump) s (CPU $(last dump_cpu) s, the server's $(last dump_srv) s), peak RSS $(mib "$(last dump_rss)") MiB"
}
run_plan() {
  local r=$1 t0 t1 n d s0
  s0=$(server_cpu)
  t0=$(now)
  plan_run "$work/desired.sql" "bench-$r" "$work/plan-$r.json" "$work/plan-$r.out.json" \
    "$work/plan-$r.log" "$work/plan-$r.time" ||
    { cat "$work/plan-$r.log" >&2; die "round $r: godwit-runner ptah-plan failed"; }
  t1=$(now)
  awk -v a="$s0" -v b="$(server_cpu)" 'BEGIN { printf "%.2f\n", b - a }' >>"$work/plan_srv.times"
  n=$(report_field "$work/plan-$r.json" statements)
  d=$(report_field "$work/plan-$r.json" destructive)
  if [ "$n" != 1 ] || [ "$d" != 0 ] ||
    ! grep -qF "\"sql\":\"ALTER TABLE $(qn "$changed") ALTER COLUMN amount TYPE numeric(16,2)" "$work/plan-$r.out.json"; then
    cat "$work/plan-$r.log" >&2
    die "round $r: the plan has '$n' statements ('$d' destructive), not the one expected (alter column $(qn "$changed").amount to numeric(16,2), not destructive)"
  fi
  secs "$t0" "$t1" >>"$work/plan.times"
  usage "$work/plan-$r.time" plan
  split_of "$work/plan-$r.log" "$t0" >>"$work/split"
  echo "  round $r: godwit-runner ptah-plan $(last plan) s (CPU $(last plan_cpu) s, the server's $(last plan_srv) s), peak RSS $(mib "$(last plan_rss)") MiB"
}
# split_of LOG T0: when (s after T0) the runner said it had connected, read the target's
# catalog, created the scratch database, loaded the desired SQL, dropped the scratch database
# (after reading the desired model), computed the plan; "-" for a line not found
split_of() {
  awk -v t0="$2" '
    function at(k) { return (k in t) ? sprintf("%.3f", t[k] - t0) : "-" }
    $2 == "PASS" && $3 == "connect:" && !("c" in t) { t["c"] = $1 }
    $2 == "PASS" && $3 == "catalog:" && !("r" in t) { t["r"] = $1 }
    $2 == "PASS" && $3 == "scratch:" && $4 == "created" { t["s"] = $1 }
    $2 == "PASS" && $3 == "load:" { t["l"] = $1 }
    $2 == "PASS" && $3 == "scratch:" && $4 == "dropped" { t["d"] = $1 }
    $2 == "PASS" && $3 == "plan:" { t["p"] = $1 }
    END { print at("c"), at("r"), at("s"), at("l"), at("d"), at("p") }' "$1"
}

echo
echo "rounds: $runs, pg_dump and the plan interleaved (pg_dump first in odd rounds)"
for ((r = 1; r <= runs; r++)); do
  if [ $((r % 2)) = 1 ]; then run_dump "$r"; run_plan "$r"; else run_plan "$r"; run_dump "$r"; fi
done
[ "$(sql target -c "SELECT count(*) FROM pg_database WHERE datname LIKE 'ptah_scratch_%'")" = 0 ] ||
  die "a scratch database was left behind"

# ---- the summary
dump_med=$(median "$work/dump.times" 3)
plan_med=$(median "$work/plan.times" 3)
dump_rss=$(median "$work/dump_rss.times" 0)
plan_rss=$(median "$work/plan_rss.times" 0)
ratio=$(awk -v a="$plan_med" -v b="$dump_med" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" -v g="$GOAL" 'BEGIN { print (r <= g ? "goal met" : "goal missed") }')
# split_median A B: the median over the rounds of column B - column A of the split lines
# (1 connected, 2 catalog read, 3 scratch created, 4 loaded, 5 scratch dropped, 6 planned;
# 0 is the start, 7 the end: the wall time)
paste -d' ' "$work/split" "$work/plan.times" >"$work/split.all"
split_median() {
  awk -v a="$1" -v b="$2" '{ x = (a == 0 ? 0 : $(a)); y = $(b); if (x != "-" && y != "-") print y - x }' \
    "$work/split.all" >"$work/split.tmp"
  if [ -s "$work/split.tmp" ]; then median "$work/split.tmp" 3 | awk '{ printf "%.3f\n", $1 }'; else echo "-"; fi
}
echo
echo "medians of $runs rounds ($tables tables; ${objects:-?} objects in the plan's model of each side):"
echo "  baseline, pg_dump --schema-only:  $dump_med s  (rounds: $(list "$work/dump.times"); CPU $(median "$work/dump_cpu.times") s, the server's $(median "$work/dump_srv.times") s), peak RSS $(mib "$dump_rss") MiB"
echo "  godwit-runner ptah-plan:          $plan_med s  (rounds: $(list "$work/plan.times"); CPU $(median "$work/plan_cpu.times") s, the server's $(median "$work/plan_srv.times") s), peak RSS $(mib "$plan_rss") MiB (rounds, KiB: $(list "$work/plan_rss.times"))"
echo "  where a plan's time goes (medians, s; from its lines' stamps):"
echo "    start, the desired file, connect (a SCRAM login)                      $(split_median 0 1)"
echo "    read the target's catalog (one REPEATABLE READ transaction)           $(split_median 1 2)"
echo "    create the scratch database (CREATE DATABASE ... TEMPLATE template0)  $(split_median 2 3)"
echo "    connect to it, load the desired SQL (a statement a round trip)        $(split_median 3 4)"
echo "    read the desired model, roll back, drop the scratch database          $(split_median 4 5)"
echo "    diff, digest                                                          $(split_median 5 6)"
echo "    the plan file, the report, exit                                       $(split_median 6 7)"
echo "ratio plan/pg_dump: $ratio (goal <= $GOAL: $verdict)"
echo "peak RSS: plan $(mib "$plan_rss") MiB, pg_dump $(mib "$dump_rss") MiB (the client processes; the server's backends are in neither);"
echo "  before any work (binary and libraries): the runner $(mib "$idle_runner") MiB, pg_dump $(mib "$idle_dump") MiB"
echo "ptah-plan-bench: tables=$tables objects=${objects:-0} pg_dump_s=$dump_med plan_s=$plan_med ratio=$ratio pg_dump_rss_kib=$dump_rss plan_rss_kib=$plan_rss pg_dump_server_cpu_s=$(median "$work/dump_srv.times") plan_server_cpu_s=$(median "$work/plan_srv.times")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
