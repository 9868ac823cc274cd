# tests/debs.sh: sourced by the installers of newer Debian packages into a private prefix
# (tests/criu/install.sh, tests/pgcopydb/install.sh), after they set PREFIX, MARKER (the file of
# the prefix that lists what was unpacked), say() and die(). debs_start makes a private apt state
# (sources list, package lists, cache: the system's apt state is never touched) on the mirror
# the system's sources use (else deb.debian.org); apt_get and apt_cache use it; debs_suite,
# debs_fetch, debs_unpack and debs_patch are the steps both installers take.

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
# debs_start NAME: checks that PREFIX is this installer's to replace and that the tools are
# here, then makes the private apt state in a fresh $work and sets $new (the prefix being built;
# both removed on exit) and MIRROR.
debs_start() {
  if [ -d "$PREFIX" ] && [ ! -e "$PREFIX/$MARKER" ] && [ -n "$(ls -A "$PREFIX")" ]; then
    die "'$PREFIX' exists and was not made by this script; remove it or pass another PREFIX"
  fi
  for tool in apt-get apt-cache dpkg-deb patchelf; do
    command -v $tool >/dev/null 2>&1 || die "'$tool' is missing (make deps installs it)"
  done
  work=$(mktemp -d "/tmp/godwit-$1-install.XXXXXX")
  new="$PREFIX.new.$$"
  trap 'rm -rf "$work" "$new"' EXIT
  trap 'exit 1' INT TERM
  MIRROR=$(mirror | sed -n '1s:/*$::p')
  [ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/debs"
  : >"$work/status"
  # -c is read after the system's configuration: its proxies and Check-Valid-Until still
  # apply, its update hooks (they clean the system's caches) do not.
  cat >"$work/apt.conf" <<APT
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
APT
}
apt_get() { apt-get -c "$work/apt.conf" "$@"; }
apt_cache() { apt-cache -c "$work/apt.conf" "$@"; }

# debs_suite SUITE: the private package lists of SUITE on MIRROR; false (said) when unreadable.
debs_suite() {
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $1 main" \
    >"$work/sources.list"
  rm -rf "$work/lists" && mkdir -p "$work/lists/partial"
  apt_get update -qq >"$work/update.log" 2>&1 && return 0
  say "cannot read suite $1 from $MIRROR:"; sed 's/^/  /' "$work/update.log"
  return 1
}

# debs_fetch PKG...: those packages and everything they depend on, as the suite has them, into
# $work/debs.
debs_fetch() {
  pkgs=$(apt_cache depends --recurse --no-recommends --no-suggests --no-conflicts \
           --no-breaks --no-replaces --no-enhances "$@" | grep -v '^[ <]' | sort -u)
  say "$(echo "$pkgs" | wc -l) packages from $MIRROR"
  # shellcheck disable=SC2086 # one package name a word
  (cd "$work/debs" && apt_get download $pkgs >"$work/download.log" 2>&1) ||
    { sed 's/^/  /' "$work/download.log"; die "apt-get download failed"; }
}

# debs_unpack: every downloaded package into $new, each named in $new/$MARKER.
debs_unpack() {
  rm -rf "$new"
  mkdir -p "$new"
  for deb in "$work"/debs/*.deb; do
    dpkg-deb -x "$deb" "$new"
    dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$new/$MARKER"
  done
}

# debs_patch PREFIX BINARY: BINARY (a path in $new) loads the libraries, and the loader, that
# PREFIX will hold; --force-rpath: an RPATH, unlike a RUNPATH, also serves the libraries' own
# dependencies.
debs_patch() {
  loader=$(find "$new/usr/lib" -maxdepth 2 -name 'ld-linux*.so.[0-9]' | sed -n 1p)
  [ -n "$loader" ] || die "no dynamic loader in the unpacked libc6"
  libdir=$(dirname "$loader" | sed "s:^$new:$1:")
  patchelf --set-interpreter "$libdir/$(basename "$loader")" --force-rpath --set-rpath "$libdir" \
    "$2"
}
