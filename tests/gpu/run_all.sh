#!/usr/bin/env bash
# FP8 Lab — the one prepared GPU run: build (numerics + gpu only), checks, benchmarks, summary.
#
#   tests/gpu/run_all.sh            (no arguments, no interaction; ≤ 8 minutes on an H200)
#
# Needs: CUDA toolkit (nvcc, cuBLASLt ≥ 12.9 for the outer-vector/block modes), CMake ≥ 3.25,
# a C++20 host compiler; ninja if present; python3 + torch optional (torch._scaled_mm peer).
# No Qt, HDF5, Google Benchmark or network needed. Results go to $OUT (default ./gpu-results):
#   env.txt, *.log, lt_support.csv, gemm_exact.csv, gemm_accuracy.csv, accumulation_fit.txt (the
#   kernel check of cuBLASLt's outputs: FAST_ACCUM=0 against the split FP32 model, FAST_ACCUM=1
#   fitted against every accumulation model), bench_gpu.csv, bench_torch.csv, summary.txt, and
#   mismatch dumps (mismatch_*.txt, gemm_mismatch_*.txt).
# Environment: BUILD_DIR (default <repo>/build-gpu-check), FP8LAB_RUN_BUDGET_S (default 470),
# CUDA_ARCHS (default "90a;90"), QUICK=1 (smaller benchmarks).
# Exit status: 0 when every check passed or skipped, 1 when a check failed or the build broke.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/gpu-results}"
BUILD="${BUILD_DIR:-$ROOT/build-gpu-check}"
BUDGET="${FP8LAB_RUN_BUDGET_S:-470}"
ARCHS="${CUDA_ARCHS:-90a;90}"
mkdir -p "$OUT"
export OUT
START=$(date +%s)
STATUS=0
declare -A RESULT

elapsed() { echo $(( $(date +%s) - START )); }
remaining() { echo $(( BUDGET - $(elapsed) )); }
say() { echo "[run_all $(elapsed)s] $*"; }

# run_step NAME CAP_SECONDS COMMAND...: runs with a timeout inside the overall budget, logs to
# $OUT/NAME.log, records PASSED / FAILED / SKIPPED / TIMEOUT.
run_step() {
  local name="$1" cap="$2"; shift 2
  local left; left=$(remaining)
  if (( left < 15 )); then
    say "$name: SKIPPED (time budget spent)"; RESULT[$name]="SKIPPED (time budget)"; return
  fi
  local t=$(( cap < left ? cap : left ))
  say "$name (timeout ${t}s): $*"
  timeout --signal=TERM --kill-after=5 "$t" "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  case $rc in
    0) RESULT[$name]="PASSED" ;;
    77) RESULT[$name]="SKIPPED ($(grep -m1 '^SKIP' "$OUT/$name.log" | cut -c1-120))" ;;
    124|137) RESULT[$name]="TIMEOUT after ${t}s"; STATUS=1 ;;
    *) RESULT[$name]="FAILED (exit $rc)"; STATUS=1 ;;
  esac
  say "$name: ${RESULT[$name]}"
}

{
  echo "date: $(date -u)"; echo "host: $(uname -a)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  command -v nvcc >/dev/null && nvcc --version | tail -2
  [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version | tail -1
  cmake --version | head -1; c++ --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
  echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# ---- build: numerics + gpu only ---------------------------------------------------------------
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
JOBS=$(nproc 2>/dev/null || echo 8)
TARGETS=(fp8lab-gpu-probe fp8lab-gpu-enumerate test_gpu_host check_gpu_kernels check_gpu_gemm bench_gpu)
run_step configure 120 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DFP8LAB_WITH_QT=OFF -DFP8LAB_WITH_HDF5=OFF -DFP8LAB_BUILD_GUI=OFF -DFP8LAB_BUILD_BENCHMARKS=OFF \
  -DFP8LAB_BUILD_TESTS=ON -DFP8LAB_WITH_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS"
if [[ ${RESULT[configure]} == PASSED ]]; then
  run_step build 330 cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"
fi
if [[ ${RESULT[build]:-} != PASSED ]]; then
  say "build failed: see $OUT/configure.log and $OUT/build.log"
  exit 1
fi
B="$BUILD"
BIN_GPU="$B/gpu"; BIN_T="$B/tests/gpu"

# ---- checks --------------------------------------------------------------------------------
run_step probe 30 "$BIN_GPU/fp8lab-gpu-probe"
run_step enumerate 60 "$BIN_GPU/fp8lab-gpu-enumerate" --csv "$OUT/lt_support.csv"
run_step check_gpu_kernels 120 "$BIN_T/check_gpu_kernels"
run_step check_gpu_gemm 180 "$BIN_T/check_gpu_gemm"
# ---- benchmarks ----------------------------------------------------------------------------
QFLAG=(); [[ "${QUICK:-0}" == 1 ]] && QFLAG=(--quick)
run_step bench_gpu 120 "$BIN_T/bench_gpu" "${QFLAG[@]}"
export CUBLASLT_WORKSPACE_SIZE=32768   # KiB: PyTorch's cuBLASLt gets the same 32 MiB as ours
if command -v python3 >/dev/null; then
  run_step bench_torch 120 python3 "$ROOT/tests/gpu/bench_scaled_mm.py" "${QFLAG[@]}"
else
  RESULT[bench_torch]="SKIPPED (no python3)"
fi
# The host-side checks last (CPU only, already run in CI; long bit-pattern sweep).
run_step test_gpu_host 120 "$BIN_T/test_gpu_host"

# ---- summary (printed last) ------------------------------------------------------------------
{
  echo
  echo "================ FP8 Lab GPU run summary ($(elapsed) s) ================"
  head -3 "$OUT/probe.log" 2>/dev/null
  for s in configure build probe enumerate check_gpu_kernels check_gpu_gemm bench_gpu bench_torch test_gpu_host; do
    printf '  %-18s %s\n' "$s" "${RESULT[$s]:-not run}"
  done
  grep -h -E 'checks, [0-9]+ failed|combinations supported|AMAX_D|exact-by-construction' "$OUT"/*.log 2>/dev/null | sed 's/^/  /'
  # The FAST_ACCUM check: which accumulation model reproduces cuBLASLt's output, bit for bit.
  if [[ -s "$OUT/accumulation_fit.txt" ]]; then
    echo "  accumulation (kernel check of the GPU's D, $OUT/accumulation_fit.txt):"
    grep -E '^(FAST_ACCUM|PRESET|PROBE)' "$OUT/accumulation_fit.txt" | cut -c1-220 | sed 's/^/    /'
  fi
  if command -v python3 >/dev/null; then
    python3 - "$OUT" <<'PY'
import csv, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
ours, torch = load("bench_gpu.csv"), load("bench_torch.csv")
gemm = [r for r in ours if r["section"] == "gemm"]
shapes = list(dict.fromkeys(r["shape"] for r in gemm))
tmap = {(r["shape"], r["config"], r["fast_accum"]): r for r in torch}
if gemm:
    print("\n  GEMM TFLOP/s, BF16 output (x = ratio to cuBLASLt BF16 | t = ratio to torch same mode)")
    print("  %-30s" % "config" + "".join("%-27s" % s for s in shapes))
    configs = list(dict.fromkeys((r["config"], r["fast_accum"]) for r in gemm))
    for cfg, fast in configs:
        line = "  %-30s" % (cfg + ("" if fast == "-1" else " fast=" + fast))
        for s in shapes:
            r = next((x for x in gemm if x["shape"] == s and x["config"] == cfg and x["fast_accum"] == fast), None)
            if not r or float(r["value"]) == 0:
                line += "%-27s" % "n/a"; continue
            v = float(r["value"]); cell = "%.0f x%.2f" % (v, float(r["ratio"]))
            t = tmap.get((s, cfg, fast)) or (tmap.get((s, "BF16 (torch.mm)", "-1")) if cfg.startswith("BF16") else None)
            if t and t["tflops"]:
                cell += " t%.2f" % (v / float(t["tflops"]))
            line += "%-27s" % cell
        print(line)
    for cfg in ["BF16 (torch.mm)", "E4M3 per-tensor", "E4M3 per-row", "E4M3 1x128 x 128x128"]:
        for fast in (["-1"] if cfg.startswith("BF16") else ["0", "1"]):
            if not any((s, cfg, fast) in tmap for s in shapes): continue
            line = "  %-30s" % ("torch " + cfg + ("" if fast == "-1" else " fast=" + fast))
            for s in shapes:
                t = tmap.get((s, cfg, fast))
                line += "%-27s" % (("%.0f" % float(t["tflops"])) if t and t["tflops"] else "n/a")
            print(line)
    # Targets: per-tensor FP8 ≥ 1.7x BF16 and ≥ 0.97x torch._scaled_mm.
    for s in shapes:
        for fast in ("0", "1"):
            r = next((x for x in gemm if x["shape"] == s and x["config"] == "E4M3 per-tensor" and x["fast_accum"] == fast), None)
            if not r or float(r["value"]) == 0: continue
            v, ratio = float(r["value"]), float(r["ratio"])
            t = tmap.get((s, "E4M3 per-tensor", fast))
            tr = (v / float(t["tflops"])) if t and t["tflops"] else None
            print("  target %s per-tensor fast=%s: %.2fx BF16 (>=1.7: %s), %s" % (s, fast, ratio, "yes" if ratio >= 1.7 else "NO",
                  ("%.2fx torch (>=0.97: %s)" % (tr, "yes" if tr >= 0.97 else "NO")) if tr else "torch n/a"))
q = [r for r in ours if r["section"] == "quantize"]
if q:
    print("\n  Quantize kernels (1 GiB float32), GB/s and ratio to a device-to-device copy")
    for r in q:
        print("  %-36s %8.1f GB/s  x%.2f" % (r["config"], float(r["value"]), float(r["ratio"])))
    pt = next((r for r in q if r["config"] == "quantize per tensor E4M3"), None)
    if pt:
        print("  target quantize >= 75%% of copy: %.0f%% -> %s" % (100 * float(pt["ratio"]), "yes" if float(pt["ratio"]) >= 0.75 else "NO"))
PY
  fi
  echo "  results in $OUT"
  echo "  overall: $([[ $STATUS == 0 ]] && echo PASSED || echo FAILED)"
} | tee "$OUT/summary.txt"
exit $STATUS
