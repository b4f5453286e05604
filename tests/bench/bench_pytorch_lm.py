#!/usr/bin/python3
"""The FP32 training step of the tiny transformer language model against the same model in PyTorch,
side by side in one run (docs/training.md "Speed").

The PyTorch model is tests/python/module/tiny_gpt.py's GPT at the shipped shape of
resources/experiments/transformer-lm.json: byte vocabulary 256, d_model 64, 2 pre-LayerNorm blocks,
4 heads, context 64, GELU FFN 256, tied lm_head — 120 576 parameters, as core's TransformerConfig
counts them — trained on batches of 16 × 64 bytes with Adam (lr 3e-3, betas 0.9 / 0.99) and gradient
clipping at 1.0, as the LM's defaults. PyTorch runs with 1 and with 2 intra-op threads (the best is
its figure); then FP8 Lab's FP32 step runs in bench_transformer (2 threads), and the script prints
both and the ratio. Usage:
    PYTHONPATH=tests/python/module python3 tests/bench/bench_pytorch_lm.py \\
        [--bench build/tests/bench/bench_transformer] [--steps 60]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

# OpenBLAS (PyTorch's BLAS on Debian) picks its kernels when loaded: --openblas-coretype Haswell makes
# a CPU it does not know (it falls back to its SSE3 "Prescott" kernels there) use the AVX2 ones.
if "--openblas-coretype" in sys.argv:
    os.environ["OPENBLAS_CORETYPE"] = sys.argv[sys.argv.index("--openblas-coretype") + 1]

import torch  # noqa: E402

from tiny_gpt import GPT, batches  # noqa: E402


def torch_step_ms(threads, steps):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(vocab=256, context=64, d=64, layers=2, heads=4)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.99))
    data = batches(1, batch=16, context=64)
    times = []
    for i in range(steps + 5):
        x, y = next(data)
        t0 = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= 5:
            times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), params


def ours_step_ms(bench):
    out = subprocess.run([bench, "--benchmark_filter=steps/fp32/"], capture_output=True, text=True)
    m = re.search(r"steps/fp32/\S+.*step_ms=([0-9.]+)", out.stdout)
    if not m:
        raise SystemExit("bench_transformer gave no FP32 row:\n" + out.stdout + out.stderr)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/tests/bench/bench_transformer")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3, help="alternate the three measurements this many times")
    ap.add_argument("--openblas-coretype", default="", help="OPENBLAS_CORETYPE for PyTorch (e.g. Haswell)")
    a = ap.parse_args()
    # The machines are noisy: the three measurements alternate, and each keeps its best round.
    t1, t2, ours = [], [], []
    params = 0
    for _ in range(a.rounds):
        ms, params = torch_step_ms(1, a.steps)
        t1.append(ms)
        t2.append(torch_step_ms(2, a.steps)[0])
        ours.append(ours_step_ms(a.bench))
    core = os.environ.get("OPENBLAS_CORETYPE", "as detected")
    print("PyTorch %s (%d parameters, OpenBLAS core type %s): 1 thread %.2f ms, 2 threads %.2f ms per step "
          "(best of %d rounds, each the median of %d steps)"
          % (torch.__version__, params, core, min(t1), min(t2), a.rounds, a.steps))
    print("FP8 Lab FP32 step (bench_transformer, 2 threads): %.2f ms per step (best of %d rounds)"
          % (min(ours), a.rounds))
    best = min(min(t1), min(t2))
    print("ratio FP8 Lab / best PyTorch: %.2f (below 1: FP8 Lab is faster)" % (min(ours) / best))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
