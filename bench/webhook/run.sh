#!/bin/bash
# The webhook benchmark (make bench): throughput and latency of POST /validate and /mutate with
# a Migration AdmissionReview and of POST /convert with a 100-object ConversionReview, over TLS
# with keep-alive, at 1, 8 and 32 connections, for godwit-webhook and, side by side, for the
# baseline (the same HTTP/TLS layer answering constant bodies: bench/webhook/baseline.c).
# Prints a table; docs/operations/benchmarks.md explains it and records measured figures. It also
# times the handlers alone, in process (bench/webhook/handler.c), to tell what the webhook adds
# from what the HTTP layer costs.
#
#   bench/webhook/run.sh [BUILD]        BUILD holds godwit-webhook, godwit-certs,
#                                       godwit-bench-baseline and godwit-bench-handler
#                                       (default: build)
# Environment (all optional):
#   BENCH_DURATION=2      seconds of one measured round
#   BENCH_ROUNDS=3        rounds per cell and server, alternating godwit and baseline so that
#                         load from elsewhere hits both alike; the median round is reported
#   BENCH_WARMUP=1        seconds of warm-up load per cell and server (wrk takes whole seconds)
#   BENCH_CONNECTIONS="1 8 32"
#   BENCH_ENDPOINTS="validate mutate convert"
#   BENCH_THREADS=2       requests handled at once by both servers (godwit-webhook's --threads default)
#   BENCH_CONVERT_OBJECTS=100
#   BENCH_MARKDOWN=FILE   also write the table as Markdown into FILE
# Goals reported against (not asserted): issue 14's, printed at the end (see "Goals" below).
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
duration=${BENCH_DURATION:-2}
rounds=${BENCH_ROUNDS:-3}
warmup=${BENCH_WARMUP:-1}
conns_list=${BENCH_CONNECTIONS:-"1 8 32"}
endpoints=${BENCH_ENDPOINTS:-"validate mutate convert"}
threads=${BENCH_THREADS:-2}
nconv=${BENCH_CONVERT_OBJECTS:-100}

die() { echo "bench: $*" >&2; exit 1; }

command -v wrk >/dev/null 2>&1 ||
  die "wrk is not installed: run 'make deps' (Debian package wrk) or apt-get install wrk"
command -v curl >/dev/null 2>&1 || die "curl is not installed: run 'make deps'"
for b in godwit-webhook godwit-certs godwit-bench-baseline godwit-bench-handler; do
  [ -x "$build/$b" ] || die "$build/$b is missing: run 'make bench' (or make BUILD=$build all $build/godwit-bench-baseline $build/godwit-bench-handler)"
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
cp "$fixtures/migration-validate.json" "$work/validate.json"
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
godwit_pid='' godwit_port='' baseline_pid='' baseline_port=''
# start NAME CMD...: runs a server with --port 0 --port-file, waits until it listens; sets
# NAME_pid and NAME_port.
start() {
  local name=$1
  shift
  "$@" --bind 127.0.0.1 --port 0 --port-file "$work/$name.port" --threads "$threads" \
    --tls-cert "$work/certs/tls.crt" --tls-key "$work/certs/tls.key" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  printf -v "${name}_pid" '%s' "$!"
  local i=0
  while [ ! -s "$work/$name.port" ]; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$!" 2>/dev/null; then
      cat "$work/$name.log" >&2
      die "$name did not start"
    fi
    sleep 0.05
  done
  printf -v "${name}_port" '%s' "$(cat "$work/$name.port")"
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
# CPU time of a process (user + system), in clock ticks
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# wrk_run PORT ENDPOINT CONNS SECONDS: one wrk run; sets requests, rps, p50_us, p99_us
wrk_run() {
  local port=$1 ep=$2 c=$3 secs=$4 t=2 line
  [ "$c" -lt 2 ] && t=1
  BENCH_BODY="$work/$ep.json" wrk -t "$t" -c "$c" -d "${secs}s" --timeout 5s \
    -s "$here/request.lua" "https://127.0.0.1:$port/$ep?timeout=10s" >"$work/wrk.out" 2>&1 ||
    { cat "$work/wrk.out" >&2; die "wrk failed"; }
  line=$(grep '^BENCH ' "$work/wrk.out") || { cat "$work/wrk.out" >&2; die "no result from wrk"; }
  # The line is ours (request.lua): key=number pairs.
  # shellcheck disable=SC2034 # duration_us and max_us are set by the eval, unused
  local duration_us max_us socket_errors status_errors
  eval "${line#BENCH }"
  [ "$status_errors" = 0 ] || die "/$ep at $c connections: $status_errors answers were not 2xx"
  [ "$socket_errors" = 0 ] || echo "bench: /$ep at $c connections: $socket_errors socket errors" >&2
  [ "$requests" -gt 0 ] || die "/$ep at $c connections: no request completed"
}

# round NAME ENDPOINT CONNS: one measured round of server NAME; appends
# "rps p50_us p99_us cpu_us_per_request" to $work/NAME.rounds
round() {
  local name=$1 ep=$2 c=$3 pid port t0 t1 requests rps p50_us p99_us v
  v=${name}_pid pid=${!v}
  v=${name}_port port=${!v}
  t0=$(ticks "$pid")
  wrk_run "$port" "$ep" "$c" "$duration"
  t1=$(ticks "$pid")
  kill -0 "$pid" 2>/dev/null || die "$name died during /$ep at $c connections"
  echo "$rps $p50_us $p99_us $(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$requests" \
    'BEGIN { printf "%.1f", d / hz * 1e6 / n }')" >>"$work/$name.rounds"
}

# median NAME: the round with the median throughput: "rps p50_us p99_us cpu_us"
median() { sort -n "$work/$1.rounds" | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }'; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "godwit webhook benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs ($cpu), $(uname -sr)"
echo "libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?'), GnuTLS $(pkg-config --modversion gnutls 2>/dev/null || echo '?'), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
echo "server turns (--threads) $threads, a thread per connection; per cell and server ${warmup}s warm-up then $rounds rounds of ${duration}s" \
  "(median shown); TLS keep-alive; request bodies: validate/mutate $(wc -c <"$work/validate.json") B," \
  "convert $(wc -c <"$work/convert.json") B ($nconv objects)"
echo "idle RSS: godwit $(kib "$godwit_pid") KiB, baseline $(kib "$baseline_pid") KiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# handler_us ENDPOINT FILE: the least CPU per request of three 1 s runs (other load on the
# machine only ever adds to it).
handler_us() {
  local best='' us
  for _ in 1 2 3; do
    us=$("$build/godwit-bench-handler" "$1" "$2" 1) || die "godwit-bench-handler $1 $2 failed"
    best=$(awk -v a="$best" -v b="$us" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
  done
  echo "$best"
}
handler=""
for ep in $endpoints; do
  handler="$handler /$ep $(handler_us "$ep" "$work/$ep.json")"
done
echo "handlers alone, in process, one thread, least of 3 runs (CPU us per request):$handler"
# The other kinds' admissions, in process only (the HTTP layer costs each kind the same):
# fixtures made from the samples by bench/webhook/fixtures/make.py.
kinds=""
for k in ptahschema podmigration; do
  for ep in mutate validate; do
    kinds="$kinds $k /$ep $(handler_us "$ep" "$fixtures/$k-$ep.json"),"
  done
done
echo "other kinds, in process, one thread (CPU us per request):${kinds%,}"
awk '{ exit !($1 > 0.5) }' /proc/loadavg &&
  echo "bench: the machine is not idle (load average above 0.5): throughput and latency will be low and noisy; CPU per request much less so" >&2
echo

rows=()
fmt_ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
fmt_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
header="| endpoint | conns | godwit req/s | p50 ms | p99 ms | CPU us/req | baseline req/s | p50 ms | p99 ms | CPU us/req | ratio | godwit RSS MiB | baseline RSS MiB |"
sep="|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
echo "$header"
echo "$sep"
peak_g=0 peak_b=0
for ep in $endpoints; do
  for c in $conns_list; do
    reset_hwm "$godwit_pid"
    reset_hwm "$baseline_pid"
    rm -f "$work/godwit.rounds" "$work/baseline.rounds"
    wrk_run "$godwit_port" "$ep" "$c" "$warmup"
    wrk_run "$baseline_port" "$ep" "$c" "$warmup"
    for _ in $(seq 1 "$rounds"); do
      round godwit "$ep" "$c"
      round baseline "$ep" "$c"
    done
    read -r g_rps g_p50 g_p99 g_cpu < <(median godwit)
    read -r b_rps b_p50 b_p99 b_cpu < <(median baseline)
    g_kib=$(kib "$godwit_pid") b_kib=$(kib "$baseline_pid")
    ratio=$(awk -v a="$g_rps" -v b="$b_rps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    [ "$g_kib" -gt "$peak_g" ] && peak_g=$g_kib
    [ "$b_kib" -gt "$peak_b" ] && peak_b=$b_kib
    row=$(printf '| /%s | %s | %.0f | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s |' "$ep" "$c" \
      "$g_rps" "$(fmt_ms "$g_p50")" "$(fmt_ms "$g_p99")" "$g_cpu" "$b_rps" "$(fmt_ms "$b_p50")" \
      "$(fmt_ms "$b_p99")" "$b_cpu" "$ratio" "$(fmt_mib "$g_kib")" "$(fmt_mib "$b_kib")")
    echo "$row"
    rows+=("$row")
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$hwm_reset" = yes ] && scope="per cell (VmHWM reset before each)" || scope="cumulative (VmHWM could not be reset)"
echo "RSS is the peak resident set (VmHWM) $scope; over the whole run: godwit $(fmt_mib "$peak_g") MiB, baseline $(fmt_mib "$peak_b") MiB"
echo "CPU us/req: the server's user+system CPU time per request (noise from other load barely moves it)"

# Goals (reported, not asserted; issue 14): the handlers alone /validate <= 20 us, /mutate <= 25 us,
# /convert <= 8 us an object; throughput >= 0.6 of the baseline's at 8 and 32 connections; the
# /convert p99 at 32 connections within 2x the baseline's; peak RSS <= 16 MiB under admission
# load, <= 32 MiB under conversion load.
printf '%s\n' $handler | paste - - | awk -v nconv="$nconv" '
  function goal(ep, max, per) {
    if (!(ep in us)) return "not measured"
    return sprintf("%s (%.1f)", (us[ep] / per <= max ? "met" : "MISSED"), us[ep] / per)
  }
  { us[$1] = $2 }
  END {
    printf "goals, handlers: /validate <= 20 us: %s; /mutate <= 25 us: %s; /convert <= 8 us an object: %s\n",
      goal("/validate", 20, 1), goal("/mutate", 25, 1), goal("/convert", 8, nconv)
  }'
printf '%s\n' "${rows[@]}" | awk -F'|' '
  { gsub(/ /, ""); ep = $2; c = $3 + 0; r = $12 + 0; rss = $13 + 0
    if (c >= 8) { if (!seen++ || r < minr) minr = r }
    if (ep == "/convert") { conv++; if (rss > conv_rss) conv_rss = rss
                            if (c == 32) { c32++; cp99 = $6 + 0; bp99 = $10 + 0 } }
    else { adm++; if (rss > adm_rss) adm_rss = rss } }
  function verdict(ok) { return ok ? "met" : "MISSED" }
  END {
    ratio = seen ? sprintf("%s (lowest %.2f)", verdict(minr >= 0.6), minr) : "not measured"
    p99 = c32 ? sprintf("%s (%.2f ms against %.2f ms)", verdict(cp99 <= 2 * bp99), cp99, bp99) : "not measured"
    ra = adm ? sprintf("%s (%.1f MiB)", verdict(adm_rss <= 16), adm_rss) : "not measured"
    rc = conv ? sprintf("%s (%.1f MiB)", verdict(conv_rss <= 32), conv_rss) : "not measured"
    printf "goals, served: ratio >= 0.6 at 8 and 32 connections: %s; /convert p99 at 32 connections <= 2x the baseline'"'"'s: %s; RSS <= 16 MiB admitting: %s, <= 32 MiB converting: %s\n",
      ratio, p99, ra, rc
  }'

if [ -n "${BENCH_MARKDOWN:-}" ]; then
  { echo "$header"; echo "$sep"; printf '%s\n' "${rows[@]}"; } >"$BENCH_MARKDOWN"
fi
