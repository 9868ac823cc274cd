# godwit: one image for every process (webhook, controller, runner, certs, node agent).
#   docker build -t ghcr.io/godwit-dev/godwit:latest .
# Binaries land in /usr/local/bin; the Kubernetes manifests pick one with `command:`.

# --- build: the same Debian 12 packages `make deps` installs to build the binaries ------------
FROM debian:12-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config \
      libmicrohttpd-dev libgnutls28-dev libssl-dev libcjson-dev libcurl4-openssl-dev \
      libpq-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The build context carries no .git: the commit and its date come in as build arguments
#   docker build --build-arg GODWIT_COMMIT=$(git rev-parse --short=12 HEAD) \
#     --build-arg GODWIT_BUILD_DATE=$(date -u -d @$(git log -1 --format=%ct) +%FT%TZ) .
ARG GODWIT_COMMIT=unknown
ARG GODWIT_BUILD_DATE=unknown
# `make clean` first: a build/ directory copied from the host must not pass for up to date.
RUN make clean && make -j"$(nproc)" GODWIT_COMMIT="$GODWIT_COMMIT" \
      GODWIT_BUILD_DATE="$GODWIT_BUILD_DATE" build/godwit-webhook build/godwit-controller \
      build/godwit-certs build/godwit-runner build/godwit-nodeagent

# --- runtime: the shared libraries, plus pgcopydb and the PostgreSQL 15 client for the runner --
FROM debian:12-slim
ARG GODWIT_VERSION=0.1.0-dev
ARG GODWIT_COMMIT=unknown
ARG GODWIT_BUILD_DATE=unknown
LABEL org.opencontainers.image.title="godwit" \
      org.opencontainers.image.description="Kubernetes admission and conversion webhook and controller for PostgreSQL migrations (pgcopydb), schema changes (Ptah) and pod migrations (PodMotion)" \
      org.opencontainers.image.version="$GODWIT_VERSION" \
      org.opencontainers.image.revision="$GODWIT_COMMIT" \
      org.opencontainers.image.created="$GODWIT_BUILD_DATE" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/godwit-dev/godwit"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libgnutls30 libcjson1 libcurl4 libpq5 libyaml-0-2 libssl3 \
      ca-certificates pgcopydb postgresql-client-15 libsqlite3-0 \
 && rm -rf /var/lib/apt/lists/*
# godwit-runner is the command of the Migration controller's runner Jobs (preflight, catalog,
# cutover, verify, compare, cleanup, reown); the worker Jobs run pgcopydb from this image too.
COPY --from=build /src/build/godwit-webhook /src/build/godwit-controller \
     /src/build/godwit-certs /src/build/godwit-runner /src/build/godwit-nodeagent /usr/local/bin/
# CRIU for the node agent: Debian 12's 3.17 cannot checkpoint on current kernels, so the one
# make deps installs (tests/criu/install.sh: a newer Debian's, in /opt/godwit/criu;
# docs/dev/podmotion-runtime.md). The agent runs as root in its own privileged DaemonSet.
COPY tests/debs.sh /tmp/install/debs.sh
COPY tests/criu/install.sh /tmp/install/criu/install.sh
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends patchelf nftables iproute2 \
 && GODWIT_CRIU_CHECK=0 sh /tmp/install/criu/install.sh /opt/godwit/criu \
 && rm -rf /var/lib/apt/lists/* /tmp/install
# The manifests run as 65532 too (runAsNonRoot needs a numeric user to check).
USER 65532:65532
CMD ["/usr/local/bin/godwit-webhook"]
