#!/bin/sh
# Checks manifests/monitoring/prometheusrule.yaml with promtool: the rules parse (promtool check rules) and
# behave as tests/monitoring/rules-test.yaml says. Usage: rules-test.sh BUILD
set -eu
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/tests/install-promtool.sh" "$root/$build/tools" 2>/dev/null ||
  "$root/tests/install-promtool.sh" "$build/tools"
promtool=$root/$build/tools/promtool
[ -x "$promtool" ] || promtool=$build/tools/promtool
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The PrometheusRule's spec is a Prometheus rule file.
sed -n '/^spec:/,$p' "$root/manifests/monitoring/prometheusrule.yaml" | sed '1d; s/^  //' >"$tmp/rules.yaml"
cp "$root/tests/monitoring/rules-test.yaml" "$tmp/"
"$promtool" check rules "$tmp/rules.yaml"
cd "$tmp" && "$promtool" test rules rules-test.yaml
