#!/usr/bin/python3
"""Cost of fp8lab.torch.attach at every=1 against the unhooked training step, side by side in one run
(these machines are noisy: the two are interleaved, step by step, and the median of each is taken).

The model is tests/python/module/tiny_gpt.py's nanoGPT-shaped GPT (d_model 64, 2 blocks, 4 heads,
context 64, batch 16, AdamW). Usage:
    PYTHONPATH=build/python:tests/python/module python3 tests/bench/bench_torch_attach.py [--steps 40]
        [--recipe te_current] [--threads 2] [--what-if mx_rceil,nvfp4_te]
Prints the median step time of each, and the ratio (goal ≤ 2×, docs/python.md)."""
import argparse
import os
import statistics
import tempfile
import time

import torch

import fp8lab.torch
from tiny_gpt import GPT, batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--recipe", default="te_current")
    ap.add_argument("--what-if", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--no-block-stats", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    plain, hooked = GPT(d=a.d_model, layers=a.layers), GPT(d=a.d_model, layers=a.layers)
    hooked.load_state_dict(plain.state_dict())
    opt_p = torch.optim.AdamW(plain.parameters(), lr=1e-3)
    opt_h = torch.optim.AdamW(hooked.parameters(), lr=1e-3)
    data = batches(1, batch=a.batch)
    path = os.path.join(tempfile.mkdtemp(), "bench.h5")
    run = fp8lab.torch.attach(hooked, path, recipe=a.recipe, every=a.every, threads=a.threads,
                              block_stats=not a.no_block_stats,
                              what_if=[w for w in a.what_if.split(",") if w])
    tp, th = [], []

    def step(model, opt, x, y, att):
        t0 = time.perf_counter()
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if att is not None:
            att.step(loss)
        return time.perf_counter() - t0

    for i in range(a.steps + 3):
        x, y = next(data)
        # Alternate which of the two runs first, so neither always inherits the other's cache state.
        if i % 2 == 0:
            p, h = step(plain, opt_p, x, y, None), step(hooked, opt_h, x, y, run)
        else:
            h, p = step(hooked, opt_h, x, y, run), step(plain, opt_p, x, y, None)
        if i >= 3:  # warm-up steps are not counted
            tp.append(p)
            th.append(h)
    t0 = time.perf_counter()
    run.close()
    close_s = time.perf_counter() - t0
    mp, mh = statistics.median(tp), statistics.median(th)
    print("d_model %d, %d blocks, recipe %s, what-if [%s], block stats %s, %d threads, %d steps: unhooked %.2f ms/step, "
          "attach(every=%d) %.2f ms/step, "
          "ratio %.2fx; close() wrote the run in %.2f s (%.1f MB)"
          % (a.d_model, a.layers, a.recipe, a.what_if, "off" if a.no_block_stats else "on", a.threads, a.steps,
             1e3 * mp, a.every, 1e3 * mh, mh / mp, close_s,
             os.path.getsize(path) / 1e6))


if __name__ == "__main__":
    main()
