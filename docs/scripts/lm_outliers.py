#!/usr/bin/python3
"""Prints the figures docs/training.md "A specimen with outliers" quotes from the session of
resources/experiments/lm-outliers-recipes.json swept over seeds (h5py only):

    fp8lab-cli sweep resources/experiments/lm-outliers-recipes.json --seeds 1-3 --out rec.h5
    docs/scripts/lm_outliers.py rec.h5

Per run (<id>-s<seed>): the final validation loss; at the last probe step the largest head's
sink per block, the massive activations and the largest kurtosis (and where), the softmax-cast
underflow per block and the block outputs' error against float32 (quant_error). Then, per
recipe, the mean over seeds of each Linear site input's SQNR as trained (block_stats, mean over
steps) — where the error concentrates — and, for the runs with what-if recipes, each recipe's mean
SQNR and underflow over the what-if steps on each site input (what_if/<recipe>/<site>/input/sqnr_db,
underflow_fraction).
"""
import collections
import math
import sys

import h5py
import numpy as np


def last(g, name):
    return np.asarray(g[name][()], dtype=np.float64)


def run_summary(rid, r):
    p = r["probes"]
    steps = p["steps"][()]
    val = float(r["training/val_loss"][-1])
    out = [f"{rid:22s} val {val:.4f}"]
    sinks, under, qerr = [], [], []
    for b in sorted(k for k in p if k.startswith("blocks.") and k.count(".") == 1):
        g = p[b]
        if "sink" in g:
            sinks.append(f"{last(g, 'sink').reshape(len(steps), -1)[-1].max():.3f}")
        if "softmax_underflow" in g:
            under.append(f"{last(g, 'softmax_underflow')[-1]:.3f}")
        if "quant_error" in g:
            qerr.append(f"{100 * last(g, 'quant_error')[-1]:.1f}%")
    massive = {k: float(g["massive"][-1]) for k, g in p.items() if isinstance(g, h5py.Group) and "massive" in g}
    kurt = {k: float(g["kurtosis"][-1]) for k, g in p.items() if isinstance(g, h5py.Group) and "kurtosis" in g}
    km = max(kurt, key=kurt.get)
    blocks_k = [f"{kurt[k]:.1f}" for k in sorted(kurt) if k.startswith("blocks.") and k.count(".") == 1]
    out.append(f"sink {' '.join(sinks)}")
    out.append(f"massive {sum(massive.values()):.0f} ({', '.join(f'{k} {v:.0f}' for k, v in massive.items() if v > 0)})")
    out.append(f"kurtosis max {kurt[km]:.1f} ({km}), block outputs {' '.join(blocks_k)}")
    out.append(f"softmax underflow {' '.join(under)}")
    if qerr:
        out.append(f"block error vs fp32 {' '.join(qerr)}")
    return val, "  ".join(out)


def main(paths):
    trained = collections.defaultdict(lambda: collections.defaultdict(list))  # recipe -> site -> [mean sqnr per seed]
    whatif = collections.defaultdict(lambda: collections.defaultdict(list))  # (run recipe, what-if) -> site -> [...]
    wunder = collections.defaultdict(lambda: collections.defaultdict(list))  # the same for underflow_fraction
    for path in paths:
        f = h5py.File(path, "r")
        for rid, r in f["runs"].items():
            if "probes" not in r:
                continue
            _, line = run_summary(rid, r)
            print(line)
            base = rid.rsplit("-s", 1)[0]
            if "block_stats" in r:
                for site, g in r["block_stats"].items():
                    if isinstance(g, h5py.Group) and "input" in g and "sqnr_db" in g["input"]:
                        v = last(g["input"], "sqnr_db")
                        v = v[np.isfinite(v)]
                        if v.size:
                            trained[base][site].append(float(v.mean()))
            if "what_if" in r:
                for rec, g in r["what_if"].items():
                    if not isinstance(g, h5py.Group):
                        continue
                    for site, sg in g.items():
                        if "input" in sg and "sqnr_db" in sg["input"]:
                            v = last(sg["input"], "sqnr_db")
                            v = v[np.isfinite(v)]
                            if v.size:
                                whatif[(base, rec)][site].append(float(v.mean()))
                            u = last(sg["input"], "underflow_fraction")
                            wunder[(base, rec)][site].append(float(100 * np.nanmean(u)))
    if trained:
        print("\nSQNR of each site's input as trained, dB (mean over steps, then over seeds):")
        sites = sorted({s for d in trained.values() for s in d})
        print(f"{'site':20s} " + " ".join(f"{b:>13s}" for b in trained))
        for s in sites:
            print(f"{s:20s} " + " ".join(f"{np.mean(trained[b][s]):13.2f}" if trained[b][s] else f"{'':>13s}" for b in trained))
    if whatif:
        print("\nWhat-if SQNR of each site's input, dB (mean over the what-if steps, then over seeds):")
        keys = sorted(whatif)
        sites = sorted({s for d in whatif.values() for s in d})
        print(f"{'site':20s} " + " ".join(f"{a[:5] + ':' + b:>20s}" for a, b in keys))
        for s in sites:
            print(f"{s:20s} " + " ".join(f"{np.mean(whatif[k][s]):20.2f}" if whatif[k][s] else f"{'':>20s}" for k in keys))
        print("\nWhat-if underflow of each site's input, % of its non-zero elements (mean over the what-if steps, then over seeds):")
        print(f"{'site':20s} " + " ".join(f"{a[:5] + ':' + b:>20s}" for a, b in keys))
        for s in sites:
            print(f"{s:20s} " + " ".join(f"{np.mean(wunder[k][s]):20.3f}" if wunder[k][s] else f"{'':>20s}" for k in keys))


if __name__ == "__main__":
    main(sys.argv[1:])
