#!/bin/sh
# promtool for tests/monitoring/rules-test.sh: taken out of Debian 12's prometheus package
# without installing it (installing would start a Prometheus server on machines with systemd).
# Usage: tests/install-promtool.sh DIR   (writes DIR/promtool; nothing when it is there)
set -eu
dir=$1
[ -x "$dir/promtool" ] && exit 0
command -v promtool >/dev/null 2>&1 && { ln -sf "$(command -v promtool)" "$dir/promtool"; exit 0; }
mkdir -p "$dir/prometheus-deb"
cd "$dir/prometheus-deb"
if ! apt-get download prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  apt-get download prometheus >/dev/null
fi
dpkg-deb -x prometheus_*.deb root
cp root/usr/bin/promtool "$dir/promtool"
cd "$dir"
rm -rf prometheus-deb
"$dir/promtool" --version >/dev/null
