#!/bin/sh
# Checks the kustomize component manifests/monitoring with the real kubectl kustomize: the base
# alone renders no Prometheus Operator object (clusters without its CRDs install it), the base
# with the component renders the controller's metrics Service, two ServiceMonitors whose
# selectors match a Service each, and the PrometheusRule; and the Grafana dashboard. Usage:
# component-test.sh BUILD (its godwit-yaml2json parses the dashboard)
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
die() { echo "component-test: $*" >&2; exit 1; }
cp -r "$root/manifests" "$tmp/m"
mkdir "$tmp/base" "$tmp/with"
printf 'resources: [../m]\n' >"$tmp/base/kustomization.yaml"
printf 'resources: [../m]\ncomponents: [../m/monitoring]\n' >"$tmp/with/kustomization.yaml"
kubectl kustomize "$tmp/base" >"$tmp/base.yaml" || die "the base does not render"
kubectl kustomize "$tmp/with" >"$tmp/with.yaml" || die "the base with the component does not render"
base=$(cat "$tmp/base.yaml")
case $base in *monitoring.coreos.com*) die "the base renders Prometheus Operator objects" ;; esac
count() { grep -c "^kind: $1\$" "$tmp/with.yaml" || true; }
[ "$(count ServiceMonitor)" = 2 ] || die "want 2 ServiceMonitors, got $(count ServiceMonitor)"
[ "$(count PrometheusRule)" = 1 ] || die "want 1 PrometheusRule, got $(count PrometheusRule)"
with=$(cat "$tmp/with.yaml")
case $with in *"name: godwit-controller-metrics"*) ;; *) die "no Service godwit-controller-metrics" ;; esac
# each ServiceMonitor selects by app.kubernetes.io/name, and a Service with a port "metrics"
# carries that label
for app in godwit-controller godwit-webhook; do
  kubectl kustomize "$tmp/with" | awk -v app="$app" '
    /^---/ { if (kind == "Service" && lab && port) found = 1; kind = ""; lab = 0; port = 0; next }
    /^kind: / { kind = $2 }
    $0 ~ "app.kubernetes.io/name: " app "$" { lab = 1 }
    /- name: metrics$/ { port = 1 }
    END { if (kind == "Service" && lab && port) found = 1; exit !found }' ||
    die "no Service labelled app.kubernetes.io/name=$app with a port named metrics"
done
# The Grafana dashboard: it parses, and every series its
# queries read is one the code exports or Prometheus makes (up).
dash=$root/manifests/monitoring/grafana-dashboard.json
case $build in /*) ;; *) build=$root/$build ;; esac
"$build/godwit-yaml2json" "$dash" >/dev/null || die "the dashboard is not valid JSON"
series=$(grep -o '"expr": "[^"]*"' "$dash" | grep -o 'godwit_[a-z_]*' | sort -u)
[ -n "$series" ] || die "the dashboard reads no godwit series"
for s in $series; do
  base=${s%_bucket}
  grep -rqs "$base" "$root/controller" "$root/webhook" "$root/shared" ||
    die "the dashboard reads $s, which nothing exports"
done
echo "component-test: the base and the monitoring component render as documented"
