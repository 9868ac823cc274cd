#!/bin/sh
# set-cabundle.sh: writes the CA that the API server must trust into every place it calls godwit
# from: each webhook of godwit-mutating and godwit-validating, and the conversion webhook of
# each godwit CRD (labelled app.kubernetes.io/part-of=godwit). Not needed with cert-manager,
# whose cainjector does the same (and would overwrite this).
#
#   manifests/set-cabundle.sh BASE64              the line godwit-certs printed
#   manifests/set-cabundle.sh --file CA.crt ...   PEM files; several are concatenated, so the
#                                                 API server trusts an old and a new CA during a
#                                                 CA rotation (docs/operations/certificates.md)
#
# Idempotent; safe to re-run. KUBECTL may name another kubectl (with flags, e.g. a --context).
set -eu
KUBECTL=${KUBECTL:-kubectl}

usage() {
  echo "usage: $0 BASE64_CA_BUNDLE | --file CA.crt [CA.crt ...]" >&2
  exit 2
}

[ $# -ge 1 ] || usage
if [ "$1" = "--file" ]; then
  shift
  [ $# -ge 1 ] || usage
  for f in "$@"; do
    grep -q -- '-----BEGIN CERTIFICATE-----' "$f" || { echo "$0: $f: not a PEM certificate" >&2; exit 1; }
  done
  bundle=$(cat "$@" | base64 | tr -d '\n')
else
  [ $# -eq 1 ] || usage
  bundle=$1
  printf '%s' "$bundle" | base64 -d 2>/dev/null | grep -q -- '-----BEGIN CERTIFICATE-----' ||
    { echo "$0: the argument is not the base64 of a PEM certificate" >&2; exit 1; }
fi

for cfg in mutatingwebhookconfiguration/godwit-mutating validatingwebhookconfiguration/godwit-validating; do
  n=$($KUBECTL get "$cfg" -o go-template='{{len .webhooks}}')
  ops=""
  i=0
  while [ "$i" -lt "$n" ]; do
    ops="$ops${ops:+,}{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$bundle\"}"
    i=$((i + 1))
  done
  $KUBECTL patch "$cfg" --type=json -p "[$ops]"
done

crds=$($KUBECTL get crd -l app.kubernetes.io/part-of=godwit -o name)
[ -n "$crds" ] || { echo "$0: no godwit CRDs found; apply manifests/ first" >&2; exit 1; }
for crd in $crds; do
  $KUBECTL patch "$crd" --type=merge \
    -p "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"$bundle\"}}}}}"
done
