#!/bin/sh
# A namespaced install (issue 12): `kustomize edit set namespace acme-db` in manifests/ and in
# manifests/cert-manager/ (done here as that command does: a `namespace:` line in each
# kustomization), rendered with the real kubectl kustomize, must name acme-db everywhere godwit
# named godwit-system: every namespaced object, the webhook configurations' Service, the
# RoleBindings' and ClusterRoleBindings' ServiceAccounts, the cert-manager CA injection
# annotations and the serving certificate's DNS names; nothing may still say godwit-system. The
# default install must still render godwit-system. Usage: namespace-test.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
die() { echo "namespace-test: $*" >&2; exit 1; }
cp -r "$root/manifests" "$tmp/m"
kubectl kustomize "$tmp/m" >"$tmp/default.yaml" || die "the default install does not render"
grep -q 'inject-ca-from: godwit-system/godwit-ca' "$tmp/default.yaml" ||
  die "the default install lost its CA injection annotations"
for k in "$tmp/m/kustomization.yaml" "$tmp/m/cert-manager/kustomization.yaml"; do
  printf '\nnamespace: acme-db\n' >>"$k"
done
kubectl kustomize "$tmp/m" >"$tmp/base.yaml" || die "the base does not render in acme-db"
kubectl kustomize "$tmp/m/cert-manager" >"$tmp/cm.yaml" || die "cert-manager/ does not render"
cat "$tmp/base.yaml" "$tmp/cm.yaml" >"$tmp/all.yaml"
if grep -n 'godwit-system' "$tmp/all.yaml" >"$tmp/left"; then
  die "still godwit-system: $(head -5 "$tmp/left")"
fi
# every object's namespace, every Service reference and every subject: acme-db
awk '
  /^---/ { kind = ""; next }
  /^kind: / { kind = $2 }
  /^  namespace: / && $2 != "acme-db" { print kind ": metadata.namespace " $2; bad = 1 }
  /^ +namespace: / && $2 != "acme-db" { print kind ": " $0; bad = 1 }
  END { exit bad }' "$tmp/all.yaml" || die "a namespace is not acme-db (above)"
ns_objects=$(grep -c '^  namespace: acme-db$' "$tmp/all.yaml" || true)
[ "$ns_objects" -ge 10 ] || die "only $ns_objects objects in acme-db"
grep -q '^      namespace: acme-db$' "$tmp/base.yaml" || die "no webhook Service in acme-db"
grep -q 'inject-ca-from: acme-db/godwit-ca' "$tmp/base.yaml" || die "CA injection not from acme-db"
[ "$(grep -c 'inject-ca-from: ' "$tmp/base.yaml")" = \
  "$(grep -c 'inject-ca-from: acme-db/godwit-ca' "$tmp/base.yaml")" ] ||
  die "a CA injection annotation names another namespace"
grep -q -- '- godwit-webhook.acme-db.svc$' "$tmp/cm.yaml" || die "certificate without godwit-webhook.acme-db.svc"
grep -q -- '- godwit-webhook.acme-db.svc.cluster.local$' "$tmp/cm.yaml" ||
  die "certificate without godwit-webhook.acme-db.svc.cluster.local"
echo "namespace-test: manifests/ and manifests/cert-manager/ install into another namespace ($ns_objects objects)"
