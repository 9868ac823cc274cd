#!/bin/sh
# Checks the kustomize component manifests/monitoring with the real kubectl kustomize: the base
# alone renders no Prometheus Operator object (clusters without its CRDs install it), the base
# with the component renders the controller's metrics Service, two ServiceMonitors whose
# selectors match a Service each, and the PrometheusRule. Usage: component-test.sh
set -eu
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
echo "component-test: the base and the monitoring component render as documented"
