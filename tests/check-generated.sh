#!/bin/sh
# Fails when manifests/crds or docs/api/reference differ from what the API tables generate.
set -eu
gen=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" crds "$tmp/crds"
"$gen" docs "$tmp/docs"
status=0
diff -ru manifests/crds "$tmp/crds" >"$tmp/crds.diff" || status=1
diff -ru docs/api/reference "$tmp/docs" >"$tmp/docs.diff" || status=1
if [ $status -ne 0 ]; then
  echo "generated files are stale: run 'make manifests' and commit the result" >&2
  head -40 "$tmp/crds.diff" "$tmp/docs.diff" >&2
fi
exit $status
