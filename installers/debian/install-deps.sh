#!/usr/bin/env bash
# Installs everything FP8 Lab needs to build, test and run on Debian 12 (bookworm) / Ubuntu,
# from Debian packages only. Idempotent and non-interactive; run as root (or with sudo).
#   installers/debian/install-deps.sh          # build + run + test dependencies
# The CUDA toolkit is optional and not installed here: the build auto-detects it under
# /usr/local/cuda (FP8LAB_WITH_CUDA=AUTO).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # Qt 6 (Widgets, Test, Concurrent, PrintSupport) + SVG export
  qt6-base-dev qt6-svg-dev
  # plots: QCustomPlot 2.1 built for Qt 6 (CMake package QCustomPlotQt6)
  libqcustomplot-dev libqcustomplot2.1-qt6
  # sessions and data
  libhdf5-dev zlib1g-dev
  # experiment configs and file headers (JSON, header-only)
  nlohmann-json3-dev
  # benchmarks (Google Benchmark; OpenBLAS only as the sgemm baseline)
  libbenchmark-dev libopenblas-dev
  # real data for the default experiment, and the text the transformer language model learns
  # (/usr/share/games/fortunes, ~2.6 MB of plain text)
  dataset-fashion-mnist fortunes
  # outside reader in tests
  python3 python3-h5py python3-numpy
  # the Python module fp8lab (pybind11) and its pytest suite, the PyTorch bridge's tests (CPU torch)
  python3-dev pybind11-dev python3-pytest python3-torch
  # GUI tests and screenshots
  xvfb xauth x11-apps imagemagick
  # fuzzing / sanitizers (clang + libFuzzer runtime)
  clang libclang-rt-14-dev
  # packaging
  dpkg-dev file
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps.sh: run as root (or install sudo)" >&2; exit 1
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "install-deps.sh: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps.sh: done"
