#!/bin/sh
# pg-without-plugin-setting.sh: a PostgreSQL 15 server as Debian 12 shipped it before 15.20, with
# no output_plugin_libraries setting (15.18), for the tests that prove godwit on such servers
# while the machine itself runs the current point release (make deps upgrades it).
#
#   tests/pg/pg-without-plugin-setting.sh [DIR]    # prints the server's bin directory
#
# Downloads (apt-get download, no install) the newest postgresql-15 package that Debian's archive
# still offers without the setting, unpacks it into DIR (default
# /tmp/godwit-postgres-15-without-plugin-setting) with the system's wal2json beside it, and
# prints DIR/usr/lib/postgresql/15/bin. The server is relocatable: its share files come from DIR.
# Idempotent and safe to run concurrently (the unpacked tree is renamed into place). Fails with
# a reason when the archive offers no such version.
set -eu
dir=${1:-/tmp/godwit-postgres-15-without-plugin-setting}
bin=$dir/usr/lib/postgresql/15/bin
lib=usr/lib/postgresql/15/lib
if [ -x "$bin/postgres" ] && [ -f "$dir/.complete" ]; then
  echo "$bin"
  exit 0
fi
# grep -c reads the whole list (grep -q would stop early, and the writer would get SIGPIPE)
has_setting() { [ "$("$1/postgres" --describe-config 2>/dev/null | grep -c '^output_plugin_libraries	')" -gt 0 ]; }
[ -f "/$lib/wal2json.so" ] || { echo "$0: /$lib/wal2json.so is missing (make deps)" >&2; exit 1; }

versions() { apt-cache madison postgresql-15 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}'; }
list=$(versions)
if [ -z "$list" ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  list=$(versions)
fi
tmp=$(mktemp -d /tmp/godwit-pgdl-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
found=''
for v in $list; do
  rm -rf "$tmp/x" "$tmp"/*.deb
  (cd "$tmp" && apt-get download -qq "postgresql-15=$v" >/dev/null 2>&1) || continue
  dpkg-deb -x "$tmp"/postgresql-15_*.deb "$tmp/x"
  if ! has_setting "$tmp/x/usr/lib/postgresql/15/bin"; then
    found=$v
    break
  fi
done
if [ -z "$found" ]; then
  echo "$0: Debian's archive offers no postgresql-15 without output_plugin_libraries (offered: $(echo $list))" >&2
  exit 1
fi
cp "/$lib/wal2json.so" "$tmp/x/$lib/"
touch "$tmp/x/.complete"
chmod -R a+rX "$tmp/x"
mv -T "$tmp/x" "$dir" 2>/dev/null || [ -f "$dir/.complete" ] || {
  echo "$0: cannot move the server into $dir" >&2
  exit 1
}
echo "$bin"
