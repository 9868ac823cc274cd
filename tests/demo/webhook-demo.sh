#!/bin/sh
# The local demo of the webhook: certificates from godwit-certs, the real godwit-webhook on a
# loopback port, and every sample under manifests/samples sent to it the way kube-apiserver
# sends AdmissionReviews: defaulted, admitted or refused with the message kubectl would print.
# It stops the webhook and removes its files when it ends.
set -eu
build=${1:-build}
work=$(mktemp -d /tmp/godwit-demo-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "issuing a CA and a serving certificate (godwit-certs)"
"$build/godwit-certs" --out "$work/certs" --dns localhost --ip 127.0.0.1 >"$work/cabundle"
echo "caBundle (first 60 characters): $(cut -c1-60 "$work/cabundle")..."

say "starting godwit-webhook on 127.0.0.1 with TLS 1.2+"
cat >"$work/policy.json" <<'JSON'
{"apiVersion":"godwit.dev/v1","kind":"AdmissionPolicy",
 "approvals":{"approvers":{"groups":["db-approvers"]},"allowSelfApproval":false},
 "limits":{"maxTableJobs":32,"maxBackoffLimit":10}}
JSON
"$build/godwit-webhook" --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" \
  --bind 127.0.0.1 --port 0 --port-file "$work/port" --policy "$work/policy.json" \
  2>"$work/webhook.log" &
pid=$!
i=0
while [ ! -s "$work/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
port=$(cat "$work/port")
url="https://127.0.0.1:$port"
i=0
until curl -sf --cacert "$work/certs/ca.crt" "https://localhost:$port/readyz" >/dev/null; do
  i=$((i+1)); [ $i -lt 100 ] || { cat "$work/webhook.log"; exit 1; }; sleep 0.05
done
echo "ready on port $port"

# Sends a sample as the user (and bound-token extras) its header names, default alice.
admit() {
  f=$1; shift
  user=$(sed -n 's/^# user: //p' "$f" | head -1)
  set -- --user "${user:-alice}" "$@"
  for e in $(sed -n 's/^# extra: //p' "$f"); do set -- "$@" --extra "$e"; done
  "$build/godwit-admit" --url "https://localhost:$port" --ca "$work/certs/ca.crt" \
    --group db-approvers "$@" --file "$f" || true
}

say "valid samples: defaulted by /mutate, admitted by /validate"
for f in manifests/samples/*.yaml; do
  [ -f "$f" ] || continue
  # Samples that are not one of our objects (Secrets, ConfigMaps) are skipped.
  grep -qE '^kind: (Migration|Ptah|PodMigration|MigrationPolicy)' "$f" || continue
  echo
  echo "-- $f"
  admit "$f"
done

say "refused samples: what kubectl apply would print"
for f in manifests/samples/refused/*.yaml; do
  [ -f "$f" ] || continue
  echo
  echo "-- $f: $(sed -n '1s/^# //p' "$f")"
  admit "$f" --quiet
done

say "metrics after the demo"
curl -s --cacert "$work/certs/ca.crt" "https://localhost:$port/metrics" | grep '^godwit_webhook_requests_total' | head -20
