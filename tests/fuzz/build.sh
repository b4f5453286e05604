#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with Debian's clang (clang-14 + libclang-rt-14-dev)
# into BUILD_DIR (default <repo>/build-fuzz): CMake with -DFP8LAB_FUZZ=ON, no GUI, no CUDA,
# no benchmarks, no Qt Test suites. Usage: tests/fuzz/build.sh [extra cmake args]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$repo/build-fuzz}"
jobs="${FP8LAB_JOBS:-2}"
cc="${CC:-clang}"
cxx="${CXX:-clang++}"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DFP8LAB_FUZZ=ON -DFP8LAB_WITH_CUDA=OFF -DFP8LAB_BUILD_GUI=OFF \
  -DFP8LAB_BUILD_TESTS=OFF -DFP8LAB_BUILD_BENCHMARKS=OFF "$@"
ninja -C "$build" -j "$jobs" fuzzers fp8lab-h5check
echo "fuzzers in $build/tests/fuzz: $(cd "$build/tests/fuzz" && ls fuzz_* | grep -v '\.' | tr '\n' ' ')"
