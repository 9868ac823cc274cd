#!/bin/sh
# tests/pgcopydb/install.sh [PREFIX]: Debian 13's pgcopydb 0.17 in PREFIX (default
# /opt/godwit/pgcopydb-0.17), run as PREFIX/bin/pgcopydb. `make deps` runs it, so that the end to
# end tests run the Migration worker with both pgcopydb generations: Debian 12's 0.10 and 0.17,
# the one users run (../shared/notes/runtimes.md).
#
# 0.17's package needs a newer libc and libpq than Debian 12 has, so, as tests/criu/install.sh
# does for CRIU, the .debs of trixie (GODWIT_PGCOPYDB_SUITES overrides) are fetched with apt-get
# download through a private apt state, unpacked into PREFIX with the libraries they need, and
# the binary rewritten with patchelf to load them from there (not started through the loader:
# it would record the loader as its own path, and pgcopydb runs itself again for its
# sub-commands). Its postgresql-client dependency is left out: it runs the pg_dump and
# pg_restore of the PostgreSQL it copies (on the PATH the worker's container gives it).
#
# Idempotent: it does nothing when PREFIX/bin/pgcopydb already says 0.17.
set -eu

PREFIX=${1:-/opt/godwit/pgcopydb-0.17}
SUITES=${GODWIT_PGCOPYDB_SUITES:-trixie}
MARKER=.godwit-pgcopydb

say() { echo "pgcopydb install: $*"; }
die() { echo "pgcopydb install: $*" >&2; exit 1; }

good_version() {
  "$1" --version 2>/dev/null | grep -q '^pgcopydb version 0\.17'
}

if [ -x "$PREFIX/bin/pgcopydb" ] && good_version "$PREFIX/bin/pgcopydb"; then
  say "$("$PREFIX/bin/pgcopydb" --version 2>/dev/null | sed -n 1p) already in $PREFIX"
  exit 0
fi
# shellcheck source=tests/debs.sh
. "$(dirname "$0")/../debs.sh"
debs_start pgcopydb

suite=
for s in $SUITES; do
  debs_suite "$s" || continue
  v=$(apt_cache policy pgcopydb 2>/dev/null | sed -n 's/^ *Candidate: //p')
  case $v in
    0.17*) suite=$s; break ;;
  esac
  say "suite $s has pgcopydb '${v:-none}', not 0.17"
done
[ -n "$suite" ] || die "no suite of $MIRROR among '$SUITES' carries pgcopydb 0.17"

say "pgcopydb $v from $suite"
# pgcopydb itself, and what its libraries need; not the PostgreSQL client it depends on
(cd "$work/debs" && apt_get download pgcopydb >"$work/download.log" 2>&1) ||
  { sed 's/^/  /' "$work/download.log"; die "apt-get download pgcopydb failed"; }
debs_fetch libc6 libgc1 libpq5
debs_unpack
debs_patch "$PREFIX" "$new/usr/bin/pgcopydb"
mkdir -p "$new/bin"
ln -s ../usr/bin/pgcopydb "$new/bin/pgcopydb"
printf 'suite %s\nmirror %s\n' "$suite" "$MIRROR" >>"$new/$MARKER"

rm -rf "$PREFIX"
mv "$new" "$PREFIX"
good_version "$PREFIX/bin/pgcopydb" || die "'$PREFIX/bin/pgcopydb --version' does not say 0.17"
say "$("$PREFIX/bin/pgcopydb" --version 2>/dev/null | sed -n 1p) in $PREFIX"
