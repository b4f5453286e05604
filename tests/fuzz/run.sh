#!/usr/bin/env bash
# Runs every fuzzer (or the ones named) for SECONDS each (default 600 = 10 CPU-minutes, one
# process per target), starting from the seed corpus in tests/fuzz/corpus/<target> and keeping
# new inputs in BUILD_DIR/tests/fuzz/corpus-<target>. Crashes land in BUILD_DIR/tests/fuzz/
# artifacts/, the whole output of each run in BUILD_DIR/tests/fuzz/log-<target>.txt. Usage: tests/fuzz/run.sh [SECONDS] [target...]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$repo/build-fuzz}"
secs="${1:-600}"; shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_session fuzz_npy fuzz_safetensors fuzz_idx fuzz_config fuzz_number)
fz="$build/tests/fuzz"
mkdir -p "$fz/artifacts"
status=0
for t in "${targets[@]}"; do
  work="$fz/corpus-$t"
  mkdir -p "$work"
  dict=()
  [ -f "$repo/tests/fuzz/$t.dict" ] && dict=(-dict="$repo/tests/fuzz/$t.dict")
  echo "== $t for ${secs}s"
  # -rss_limit_mb / -malloc_limit_mb: a bad header must not make a reader allocate 2 GiB.
  # -timeout: one input taking > 10 s is a hang.
  # Leaks allocated inside libhdf5 itself on damaged files are suppressed (lsan-libhdf5.supp);
  # FP8 Lab's own HDF5 ids are checked by fuzz_session after every input.
  if ! LSAN_OPTIONS="suppressions=$repo/tests/fuzz/lsan-libhdf5.supp:print_suppressions=0" \
       ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       "$fz/$t" "$work" "$repo/tests/fuzz/corpus/$t" "${dict[@]}" \
         -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
         -max_len=65536 -artifact_prefix="$fz/artifacts/$t-" -print_final_stats=1 2>&1 | tee "$fz/log-$t.txt" | tail -25; then
    status=1
  fi
done
exit $status
