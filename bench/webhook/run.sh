#!/bin/bash
# The webhook benchmark (make bench): throughput and latency of POST /validate and /mutate with
# a Migration AdmissionReview and of POST /convert with a 100-object ConversionReview, over TLS
# with keep-alive, at 1, 8 and 32 connections, for godwit-webhook and, side by side, for the
# baseline (the same HTTP/TLS layer answering constant bodies: bench/webhook/baseline.c).
# Prints a table; docs/operations/benchmarks.md explains it and records measured figures.
#
#   bench/webhook/run.sh [BUILD]        BUILD holds godwit-webhook, godwit-certs and
#                                       godwit-bench-baseline (default: build)
# Environment (all optional):
#   BENCH_DURATION=5      seconds measured per cell and server
#   BENCH_WARMUP=1        seconds of warm-up load before each measurement
#   BENCH_CONNECTIONS="1 8 32"
#   BENCH_ENDPOINTS="validate mutate convert"
#   BENCH_THREADS=2       request threads of both servers (godwit-webhook's default)
#   BENCH_CONVERT_OBJECTS=100
#   BENCH_MARKDOWN=FILE   also write the table as Markdown into FILE
# Goals reported against (not asserted): throughput >= 0.9 x baseline, p99 <= 1 ms at 32
# connections, peak RSS <= 16 MiB.
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
duration=${BENCH_DURATION:-5}
warmup=${BENCH_WARMUP:-1}
conns_list=${BENCH_CONNECTIONS:-"1 8 32"}
endpoints=${BENCH_ENDPOINTS:-"validate mutate convert"}
threads=${BENCH_THREADS:-2}
nconv=${BENCH_CONVERT_OBJECTS:-100}

die() { echo "bench: $*" >&2; exit 1; }

command -v wrk >/dev/null 2>&1 ||
  die "wrk is not installed: run 'make deps' (Debian package wrk) or apt-get install wrk"
command -v curl >/dev/null 2>&1 || die "curl is not installed: run 'make deps'"
for b in godwit-webhook godwit-certs godwit-bench-baseline; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make bench' (or make BUILD=$build all $build/godwit-bench-baseline)"
done

work=$(mktemp -d /tmp/godwit-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- inputs ----
"$build/godwit-certs" --out "$work/certs" --dns localhost --ip 127.0.0.1 >/dev/null 2>"$work/certs.log" ||
  { cat "$work/certs.log" >&2; die "godwit-certs failed"; }

fixtures=$here/fixtures
cp "$fixtures/migration-create.json" "$work/validate.json"
cp "$fixtures/migration-create.json" "$work/mutate.json"
# A ConversionReview as kube-apiserver sends it when a client lists stored v1alpha1 Migrations
# in v1: nconv objects, each its own name and uid.
{
  printf '{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":'
  printf '{"uid":"0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f","desiredAPIVersion":"pgcopydb.io/v1","objects":['
  for i in $(seq 1 "$nconv"); do
    [ "$i" -gt 1 ] && printf ','
    sed -e "s/NNNN/$(printf %04d "$i")/; s/NNN/$(printf %03d "$i")/" \
      "$fixtures/migration-v1alpha1.json" | tr -d '\n'
  done
  printf ']}}\n'
} >"$work/convert.json"

# ---- servers ----
# start NAME CMD...: runs a server with --port 0 --port-file, waits until it listens.
start() {
  local name=$1
  shift
  "$@" --bind 127.0.0.1 --port 0 --port-file "$work/$name.port" --threads "$threads" \
    --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "${name}_pid=$!"
  local i=0
  while [ ! -s "$work/$name.port" ]; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$!" 2>/dev/null; then
      cat "$work/$name.log" >&2
      die "$name did not start"
    fi
    sleep 0.05
  done
  eval "${name}_port=$(cat "$work/$name.port")"
}

# post PORT ENDPOINT OUT: one request; fails unless the answer is 200.
post() {
  local code
  code=$(curl -sS --cacert "$work/certs/ca.crt" -o "$3" -w '%{http_code}' \
    -H 'Content-Type: application/json' --data-binary "@$work/$2.json" \
    "https://127.0.0.1:$1/$2?timeout=10s") || die "POST /$2 failed"
  [ "$code" = 200 ] || { head -c 400 "$3" >&2; echo >&2; die "POST /$2 answered $code"; }
}

start godwit "$build/godwit-webhook"
i=0
until curl -sf --cacert "$work/certs/ca.crt" "https://127.0.0.1:$godwit_port/readyz" >/dev/null; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/godwit.log" >&2; die "godwit-webhook never became ready"; }
  sleep 0.05
done

# What godwit answers is what the baseline will send back, byte for byte; check it is the
# answer the benchmark means to measure (an admission, not an error).
for ep in $endpoints; do
  post "$godwit_port" "$ep" "$work/$ep.answer"
  case $ep in
    validate | mutate) grep -q '"allowed":true' "$work/$ep.answer" ||
      die "/$ep did not allow the fixture: $(head -c 400 "$work/$ep.answer")" ;;
    convert) grep -q '"status":"Success"' "$work/$ep.answer" ||
      die "/convert did not succeed: $(head -c 400 "$work/$ep.answer")" ;;
  esac
done
args=()
for ep in $endpoints; do args+=("--$ep-body" "$work/$ep.answer"); done
start baseline "$build/godwit-bench-baseline" "${args[@]}"
for ep in $endpoints; do
  post "$baseline_port" "$ep" "$work/$ep.baseline"
  cmp -s "$work/$ep.answer" "$work/$ep.baseline" || die "the baseline's /$ep answer differs"
done

# ---- measuring ----
kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
reset_hwm() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || hwm_reset=no; }
hwm_reset=yes

# measure PID PORT ENDPOINT CONNS: sets m_rps, m_p50 and m_p99 (microseconds) and m_kib.
measure() {
  local pid=$1 port=$2 ep=$3 c=$4 t=2 line
  [ "$c" -lt 2 ] && t=1
  local url="https://127.0.0.1:$port/$ep?timeout=10s"
  reset_hwm "$pid"
  BENCH_BODY="$work/$ep.json" wrk -t "$t" -c "$c" -d "${warmup}s" --timeout 5s \
    -s "$here/request.lua" "$url" >/dev/null 2>&1 || true
  BENCH_BODY="$work/$ep.json" wrk -t "$t" -c "$c" -d "${duration}s" --timeout 5s \
    -s "$here/request.lua" "$url" >"$work/wrk.out" 2>&1 || { cat "$work/wrk.out" >&2; die "wrk failed"; }
  line=$(grep '^BENCH ' "$work/wrk.out") || { cat "$work/wrk.out" >&2; die "no result from wrk"; }
  kill -0 "$pid" 2>/dev/null || die "a server died during /$ep at $c connections"
  # The line is ours (request.lua): key=number pairs.
  local requests duration_us rps p50_us p99_us max_us socket_errors status_errors
  eval "${line#BENCH }"
  [ "$status_errors" = 0 ] || die "/$ep at $c connections: $status_errors answers were not 2xx"
  [ "$socket_errors" = 0 ] || echo "bench: /$ep at $c connections: $socket_errors socket errors" >&2
  [ "$requests" -gt 0 ] || die "/$ep at $c connections: no request completed"
  m_rps=$rps m_p50=$p50_us m_p99=$p99_us m_kib=$(kib "$pid")
}

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "godwit webhook benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $(uname -sr)"
echo "libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?'), GnuTLS $(pkg-config --modversion gnutls 2>/dev/null || echo '?'), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
echo "server threads $threads; ${duration}s per cell after ${warmup}s warm-up; TLS keep-alive; request bodies:" \
  "validate/mutate $(wc -c <"$work/validate.json") B, convert $(wc -c <"$work/convert.json") B ($nconv objects)"
echo "idle RSS: godwit $(kib "$godwit_pid") KiB, baseline $(kib "$baseline_pid") KiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ exit !($1 > 0.5) }' /proc/loadavg &&
  echo "bench: the machine is not idle (load average above 0.5): the figures will be low and noisy" >&2
echo

rows=()
fmt_ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
fmt_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
header="| endpoint | conns | godwit req/s | p50 ms | p99 ms | baseline req/s | p50 ms | p99 ms | ratio | godwit RSS MiB | baseline RSS MiB |"
sep="|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$header"
echo "$sep"
peak_g=0 peak_b=0
for ep in $endpoints; do
  for c in $conns_list; do
    measure "$godwit_pid" "$godwit_port" "$ep" "$c"
    g_rps=$m_rps g_p50=$m_p50 g_p99=$m_p99 g_kib=$m_kib
    measure "$baseline_pid" "$baseline_port" "$ep" "$c"
    b_rps=$m_rps b_p50=$m_p50 b_p99=$m_p99 b_kib=$m_kib
    ratio=$(awk -v a="$g_rps" -v b="$b_rps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    [ "$g_kib" -gt "$peak_g" ] && peak_g=$g_kib
    [ "$b_kib" -gt "$peak_b" ] && peak_b=$b_kib
    row=$(printf '| /%s | %s | %.0f | %s | %s | %.0f | %s | %s | %s | %s | %s |' "$ep" "$c" \
      "$g_rps" "$(fmt_ms "$g_p50")" "$(fmt_ms "$g_p99")" "$b_rps" "$(fmt_ms "$b_p50")" \
      "$(fmt_ms "$b_p99")" "$ratio" "$(fmt_mib "$g_kib")" "$(fmt_mib "$b_kib")")
    echo "$row"
    rows+=("$row")
  done
done
echo
[ "$hwm_reset" = yes ] && scope="per cell (VmHWM reset before each)" || scope="cumulative (VmHWM could not be reset)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RSS is the peak resident set (VmHWM) $scope; over the whole run: godwit $(fmt_mib "$peak_g") MiB, baseline $(fmt_mib "$peak_b") MiB"

# Goals (reported, not asserted).
awk -v rows="$(printf '%s\n' "${rows[@]}")" -v peak="$peak_g" 'BEGIN {
  n = split(rows, r, "\n"); minr = 99; worst = 0
  for (i = 1; i <= n; i++) {
    split(r[i], f, "|"); gsub(/ /, "", f[3]); gsub(/ /, "", f[10]); gsub(/ /, "", f[6])
    if (f[10] + 0 < minr) minr = f[10] + 0
    if (f[3] == 32 && f[6] + 0 > worst) worst = f[6] + 0
  }
  printf "goals: ratio >= 0.90: %s (lowest %.2f); p99 <= 1 ms at 32 connections: %s (worst %.2f ms); RSS <= 16 MiB: %s (%.1f MiB)\n",
    (minr >= 0.9 ? "met" : "MISSED"), minr, (worst <= 1 ? "met" : "MISSED"), worst,
    (peak / 1024 <= 16 ? "met" : "MISSED"), peak / 1024
}'

if [ -n "${BENCH_MARKDOWN:-}" ]; then
  { echo "$header"; echo "$sep"; printf '%s\n' "${rows[@]}"; } >"$BENCH_MARKDOWN"
fi
