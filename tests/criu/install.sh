#!/bin/sh
# tests/criu/install.sh [PREFIX]: a CRIU that works on this kernel, in PREFIX (default
# /opt/godwit/criu), run as PREFIX/bin/criu. `make deps` runs it; docs/dev/podmotion-runtime.md
# says why it is done this way.
#
# Debian 12's criu 3.17.1 stops at the vDSO of current kernels, and Debian 13's 4.1.1 cannot
# dump a TCP socket on Linux 6.16 and later (getsockopt(SO_PASSCRED) on an inet socket now
# fails; fixed in CRIU 4.2). So the .debs of a suite that carries CRIU 4.2 or later (forky, else
# sid; GODWIT_CRIU_SUITES overrides) are fetched with apt-get download through a private sources
# list, package lists and cache (the system's apt state is never touched), unpacked with
# dpkg-deb -x into PREFIX together with the libraries they need (the newer libc included), and
# the criu binary is rewritten with patchelf to load them from PREFIX. Nothing is exported.
#
# Idempotent: it does nothing when PREFIX/bin/criu already says 4.2 or later. It ends with
# `criu check` and fails, showing what criu said, unless that passes (GODWIT_CRIU_CHECK=0 skips
# it: an image build has no privileges to check a kernel with).
set -eu

PREFIX=${1:-/opt/godwit/criu}
SUITES=${GODWIT_CRIU_SUITES:-forky sid}
MARKER=.godwit-criu

say() { echo "criu install: $*"; }
die() { echo "criu install: $*" >&2; exit 1; }

# True when "criu --version" of $1 says 4.2 or later.
good_version() {
  v=$("$1" --version 2>/dev/null | sed -n 's/^Version: //p')
  [ -n "$v" ] && dpkg --compare-versions "$v" ge 4.2
}

if [ -x "$PREFIX/bin/criu" ] && good_version "$PREFIX/bin/criu"; then
  say "$("$PREFIX/bin/criu" --version | sed -n 1p) already in $PREFIX"
  exit 0
fi
# shellcheck source=tests/debs.sh
. "$(dirname "$0")/../debs.sh"
debs_start criu

suite=
for s in $SUITES; do
  debs_suite "$s" || continue
  v=$(apt_cache policy criu 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ -n "$v" ] && [ "$v" != "(none)" ] && dpkg --compare-versions "$v" ge 4.2; then
    suite=$s
    break
  fi
  say "suite $s has criu '${v:-none}', not 4.2 or later"
done
[ -n "$suite" ] || die "no suite of $MIRROR among '$SUITES' carries criu 4.2 or later"

# criu and everything it depends on, as that suite has them.
say "criu $v from $suite"
debs_fetch criu
debs_unpack
debs_patch "$PREFIX" "$new/usr/sbin/criu"
mkdir -p "$new/bin"
ln -s ../usr/sbin/criu "$new/bin/criu"
printf 'suite %s\nmirror %s\n' "$suite" "$MIRROR" >>"$new/$MARKER"

rm -rf "$PREFIX"
mv "$new" "$PREFIX"
if [ "${GODWIT_CRIU_CHECK:-1}" = 0 ]; then
  # an image build: no privileges to check the kernel with; the node agent publishes what
  # criu check says on the node it runs on
  say "$("$PREFIX/bin/criu" --version | sed -n 1p) in $PREFIX (not checked: GODWIT_CRIU_CHECK=0)"
  exit 0
fi
if ! out=$("$PREFIX/bin/criu" check 2>&1); then
  rm -f "$PREFIX/bin/criu" # so that the next run tries again
  echo "$out" | sed 's/^/  /' >&2
  die "'$PREFIX/bin/criu check' failed on $(uname -r); what it said is above"
fi
say "$("$PREFIX/bin/criu" --version | sed -n 1p) in $PREFIX; criu check said:"
echo "$out" | sed 's/^/  /'
