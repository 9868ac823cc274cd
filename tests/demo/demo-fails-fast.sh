#!/bin/bash
# The demo stops at once when the Migration fails, and says why: run with the source's admin
# step left out (DEMO_SKIP_ADMIN_STEP=1), on a PostgreSQL that lists the output plugins a slot
# may use, the preflight refuses wal2json; the demo must end within a minute of the apply,
# exit 1, and print the Migration's reason with the statement that fixes it.
#
#   tests/demo/demo-fails-fast.sh [BUILD]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
log=$(mktemp /tmp/godwit-demo-fail-XXXXXX.log)
trap 'rm -f "$log"' EXIT
fail() { echo "demo-fails-fast: $*" >&2; tail -n 40 "$log" >&2; exit 1; }

# the whole list first, then the search: grep -q would close the pipe early, and under pipefail
# postgres's SIGPIPE would read as "no such setting"
settings=$(/usr/lib/postgresql/15/bin/postgres --describe-config 2>/dev/null) || true
grep -q '^output_plugin_libraries	' <<<"$settings" ||
  fail "the installed PostgreSQL predates output_plugin_libraries (make deps brings the current one)"
DEMO_SKIP_ADMIN_STEP=1 "$ROOT/tests/demo/migration-demo.sh" "$BUILD" >"$log" 2>&1 &
pid=$!
applied=''
for ((i = 0; i < 3000; i++)); do # 300 s for the cluster, the servers and the sample data
  kill -0 "$pid" 2>/dev/null || break
  [ -z "$applied" ] && grep -q 'migration.pgcopydb.io/shop created' "$log" && applied=$i
  if [ -n "$applied" ] && [ $((i - applied)) -gt 600 ]; then
    kill "$pid"
    fail "the demo still ran 60 s after the apply of a Migration that fails in its preflight"
  fi
  sleep 0.1
done
wait "$pid"
rc=$?
[ -n "$applied" ] || fail "the demo never applied the Migration"
[ "$rc" = 1 ] || fail "the demo exited $rc, not 1"
grep -q 'the Migration failed: PreflightFailed: the preflight failed before any data moved: source.outputPlugin: the source server refuses wal2json' "$log" ||
  fail "the demo did not print the Migration's reason"
grep -q "ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'test_decoding', 'wal2json'; SELECT pg_reload_conf()" "$log" ||
  fail "the reason lacks the statement that fixes it"
echo "the demo stopped $(( (i - applied) / 10 )) s after the apply, with the Migration's reason"

# Where Pods cannot get their volumes (no mount namespaces: here, as user nobody), the local
# cluster of the demos stops before it starts anything, with one line saying what is missing.
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  # a copy nobody can read, whatever the checkout's permissions
  dir=$(mktemp -d /tmp/godwit-nomounts-XXXXXX)
  mkdir -p "$dir/tests/localcluster" "$dir/build"
  cp "$ROOT/tests/localcluster/up" "$dir/tests/localcluster/"
  for b in godwit-apiserver godwit-certs godwit-yaml2json godwit-webhook godwit-jobrunner; do
    case $BUILD in /*) cp "$BUILD/$b" "$dir/build/" ;; *) cp "$ROOT/$BUILD/$b" "$dir/build/" ;; esac
  done
  chmod -R a+rX "$dir" && chmod 0777 "$dir"
  out=$(cd "$dir" && GODWIT_BUILD=build setpriv --reuid 65534 --regid 65534 --clear-groups \
          tests/localcluster/up --dir "$dir/cluster" --require-mounts 2>&1)
  rc=$?
  rm -rf "$dir"
  [ $rc = 1 ] || { echo "$out" >&2; fail "up --require-mounts went on without mount namespaces (exit $rc)"; }
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -q 'cannot get their volumes' <<<"$out" ||
    { echo "$out" >&2; fail "up --require-mounts did not say in one line what is missing"; }
  echo "demo-fails-fast: without mount namespaces the local cluster stops at once: $out"
fi
