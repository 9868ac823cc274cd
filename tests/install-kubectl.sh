#!/bin/sh
# kubectl for the local-cluster tests: this machine kind ships kubectl 1.32; a plain Debian 12 has
# none, and Debian's own package is kubernetes-client (kubectl 1.20). Both work for our tests.
set -eu
command -v kubectl >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kubernetes-client >/dev/null
kubectl version --client >/dev/null 2>&1 || kubectl version --client=true
