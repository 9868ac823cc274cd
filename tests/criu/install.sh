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
if [ -d "$PREFIX" ] && [ ! -e "$PREFIX/$MARKER" ] && [ -n "$(ls -A "$PREFIX")" ]; then
  die "'$PREFIX' exists and was not made by this script; remove it or pass another PREFIX"
fi
for tool in apt-get apt-cache dpkg-deb patchelf; do
  command -v $tool >/dev/null 2>&1 || die "'$tool' is missing (make deps installs it)"
done

# The Debian mirror the system uses (one-line and deb822 sources; the first non-security http(s)
# URI of a deb entry), else deb.debian.org.
mirror() {
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk '$1 == "deb" {
           i = 2
           if($i ~ /^\[/) { while(i <= NF && $i !~ /\]$/) i++; i++ }
           if($i ~ /^https?:\/\// && $i !~ /security/ && $(i + 1) !~ /-security$/) { print $i; exit }
         }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         {
           uris = ""; suites = ""; types = ""; enabled = "yes"
           for(i = 1; i <= NF; i++) {
             line = $i; key = tolower(line); sub(/:.*/, "", key); sub(/^[^:]*:[ \t]*/, "", line)
             if(key == "uris") uris = line
             else if(key == "suites") suites = line
             else if(key == "types") types = line
             else if(key == "enabled") enabled = line
           }
           if(types !~ /(^| )deb( |$)/ || enabled == "no" || suites ~ /-security/) next
           n = split(uris, u, /[ \t]+/)
           for(k = 1; k <= n; k++)
             if(u[k] ~ /^https?:\/\// && u[k] !~ /security/) { print u[k]; exit }
         }' "$f"
  done
}
MIRROR=$(mirror | sed -n '1s:/*$::p')
[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian

work=$(mktemp -d /tmp/godwit-criu-install.XXXXXX)
new="$PREFIX.new.$$"
trap 'rm -rf "$work" "$new"' EXIT
trap 'exit 1' INT TERM
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/debs"
: >"$work/status"
# -c is read after the system's configuration: its proxies and Check-Valid-Until still apply, its
# update hooks (they clean the system's caches) do not.
cat >"$work/apt.conf" <<EOF
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
Dir::Etc::sourcelist "$work/sources.list";
Dir::Etc::sourceparts "$work/parts";
Dir::Etc::preferences "/dev/null";
Dir::Etc::preferencesparts "$work/parts";
Dir::State::Lists "$work/lists";
Dir::State::status "$work/status";
Dir::Cache "$work/cache";
APT::Sandbox::User "root";
EOF
apt_get() { apt-get -c "$work/apt.conf" "$@"; }
apt_cache() { apt-cache -c "$work/apt.conf" "$@"; }

suite=
for s in $SUITES; do
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $s main" \
    >"$work/sources.list"
  rm -rf "$work/lists" && mkdir -p "$work/lists/partial"
  if ! apt_get update -qq >"$work/update.log" 2>&1; then
    say "cannot read suite $s from $MIRROR:"; sed 's/^/  /' "$work/update.log"
    continue
  fi
  v=$(apt_cache policy criu 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [ -n "$v" ] && [ "$v" != "(none)" ] && dpkg --compare-versions "$v" ge 4.2; then
    suite=$s
    break
  fi
  say "suite $s has criu '${v:-none}', not 4.2 or later"
done
[ -n "$suite" ] || die "no suite of $MIRROR among '$SUITES' carries criu 4.2 or later"

# criu and everything it depends on, as that suite has them.
pkgs=$(apt_cache depends --recurse --no-recommends --no-suggests --no-conflicts \
         --no-breaks --no-replaces --no-enhances criu | grep -v '^[ <]' | sort -u)
say "criu $v from $MIRROR $suite: $(echo "$pkgs" | wc -l) packages"
# shellcheck disable=SC2086 # one package name a word
(cd "$work/debs" && apt_get download $pkgs >"$work/download.log" 2>&1) ||
  { sed 's/^/  /' "$work/download.log"; die "apt-get download failed"; }

rm -rf "$new"
mkdir -p "$new"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$new"
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$new/$MARKER"
done
loader=$(find "$new/usr/lib" -maxdepth 2 -name 'ld-linux*.so.[0-9]' | sed -n 1p)
[ -n "$loader" ] || die "no dynamic loader in the unpacked libc6"
libdir=$(dirname "$loader" | sed "s:^$new:$PREFIX:")
# --force-rpath: an RPATH, unlike a RUNPATH, also serves the libraries' own dependencies.
patchelf --set-interpreter "$libdir/$(basename "$loader")" --force-rpath --set-rpath "$libdir" \
  "$new/usr/sbin/criu"
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
