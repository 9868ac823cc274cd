#!/bin/bash
# make fuzz: builds the libFuzzer targets with clang (AddressSanitizer, UndefinedBehaviorSanitizer,
# LeakSanitizer) into build-fuzz/, replays the regression inputs, then fuzzes each target for a
# bounded time from the seed corpus. Fails on any crash, leak, undefined behaviour, timeout, or
# broken contract (the targets check what DESIGN.md promises; see each fuzz_*.c).
#
#   tests/fuzz/run.sh [TARGET ...]      TARGET: admission conversion json jsonpatch yaml
#                                       (default: all)
# Environment:
#   FUZZ_SECONDS=30    fuzzing time per target
#   FUZZ_BUILD=build-fuzz
#   FUZZ_TIMEOUT=10    seconds one input may take before it counts as a hang
#   FUZZ_ARGS="..."    extra libFuzzer flags (e.g. -jobs=2 -workers=2, -use_value_profile=1)
#   FUZZ_ROUNDTRIP=0   do not check lossless conversion round trips (fuzz_conversion)
#   FUZZ_REINVOKE=0    do not check that /mutate is idempotent (fuzz_admission)
# A failure leaves the input in $FUZZ_BUILD/artifacts/<target>/; replay it with
#   $FUZZ_BUILD/fuzz/fuzz_<target> FILE
# and, once fixed, keep it in tests/fuzz/regressions/<target>/.
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${FUZZ_SECONDS:-30}
build=${FUZZ_BUILD:-build-fuzz}
timeout=${FUZZ_TIMEOUT:-10}
targets=${*:-"admission conversion json jsonpatch yaml"}
extra=${FUZZ_ARGS:-}

die() { echo "fuzz: $*" >&2; exit 1; }

command -v clang >/dev/null 2>&1 || die "clang is not installed: run 'make deps'"
rt=$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
[ -f "$rt" ] || die "libFuzzer's runtime is missing (libclang_rt.fuzzer-x86_64.a): install \
libclang-rt-14-dev ('make deps')"

san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
mkdir -p "$build"
make --no-print-directory -j"$(nproc)" BUILD="$build" CC=clang OPT=-O1 SAN="$san" fuzz-targets \
  >"$build/make.log" 2>&1 || { tail -40 "$build/make.log" >&2; die "build failed (log: $build/make.log)"; }

# Seeds: the hand-written ones, the generated ones (every kind and version of the registry),
# and for YAML every manifest of the repository. libFuzzer adds what it finds to corpus/.
gen=$build/seeds
rm -rf "$gen"
"$build/godwit-fuzz-seeds" "$gen" >/dev/null
mkdir -p "$gen/yaml"
find manifests docs -name '*.yaml' -size -64k -exec cp {} "$gen/yaml/" \; 2>/dev/null || true

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Every target reads JSON except yaml; a dictionary speeds them up.
dict_for() { [ "$1" = yaml ] && echo tests/fuzz/yaml.dict || echo "$gen/json.dict"; }

failed=()
summary=()
for t in $targets; do
  bin=$build/fuzz/fuzz_$t
  [ -x "$bin" ] || die "no fuzz target \"$t\" ($bin)"
  corpus=$build/corpus/$t
  art=$build/artifacts/$t
  mkdir -p "$corpus" "$art"
  seeds="tests/fuzz/corpus/$t $gen/$t"
  [ "$t" = json ] && seeds="$seeds $gen/admission $gen/conversion" # the bodies it decodes
  for d in $seeds; do
    [ -d "$d" ] && cp -r "$d/." "$corpus/"
  done
  log=$build/fuzz-$t.log

  # 1. the regressions: inputs that once failed must pass
  reg=tests/fuzz/regressions/$t
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    if ! "$bin" -timeout="$timeout" -rss_limit_mb=2048 "$reg"/* >"$log" 2>&1; then
      tail -30 "$log" >&2
      failed+=("$t (regression replay; log: $log)")
      summary+=("$(printf '%-11s regression inputs FAILED' "$t")")
      continue
    fi
  fi

  # 2. fuzzing
  echo "fuzz: $t for ${secs}s ($(find "$corpus" -type f | wc -l) seeds)"
  rc=0
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb=2048 -max_len=131072 \
    -dict="$(dict_for "$t")" -artifact_prefix="$art/" -print_final_stats=1 $extra \
    "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  n=$(find "$corpus" -type f | wc -l)
  line=$(printf '%-11s %9s execs  %6s/s  corpus %5s  %-22s  peak RSS %s MB' "$t" "${execs:-?}" \
    "${speed:-?}" "$n" "${cov:-}" "${rss:-?}")
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $rc); the end of $log:" >&2
    grep -E '^==[0-9]+==ERROR|^==fuzz==|runtime error|SUMMARY|Test unit written|ALARM|out-of-memory' "$log" | head -20 >&2 || true
    tail -40 "$log" >&2
    failed+=("$t (log: $log; input in $art/)")
    summary+=("$line  FAILED")
  else
    summary+=("$line  ok")
  fi
done

echo
echo "fuzz summary (${secs}s per target, clang $(clang -dumpversion), ASan+UBSan+LSan):"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
