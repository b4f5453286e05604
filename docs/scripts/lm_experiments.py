#!/usr/bin/python3
"""Summarises the language-model experiments of resources/experiments/lm-*.json from their
session files (h5py only): per run the final validation loss and the probe values that
docs/training.md "Transformer experiments" quotes: kurtosis and sink at the last probe step and
their peak over training (tensor and step), the gradient underflow's mean over training per
tensor (the largest) and its peak.

    fp8lab-cli run resources/experiments/lm-recipes.json --out lm-recipes.h5
    docs/scripts/lm_experiments.py lm-recipes.h5 [more.h5 ...]

Probe layout and definitions: docs/session-format.md "Language-model runs", docs/training.md
"Probes". Loss in nats per byte; bits per byte = nats / ln 2.
"""
import math
import sys

import h5py
import numpy as np


def groups(probes, name):
    """(tensor, dataset) for every probe tensor that has the probe `name`, in file order."""
    return [(k, g[name][()]) for k, g in probes.items() if isinstance(g, h5py.Group) and name in g]


def peak(probes, name, steps):
    """(value, tensor, step) of the largest finite value of probe `name` over every tensor and step."""
    best = (-math.inf, "", -1)
    for s, v in groups(probes, name):
        v = np.asarray(v, dtype=np.float64).reshape(len(steps), -1)
        if not np.isfinite(v).any():
            continue
        row = np.nanmax(np.where(np.isfinite(v), v, np.nan), axis=1)
        i = int(np.nanargmax(row))
        if row[i] > best[0]:
            best = (float(row[i]), s, int(steps[i]))
    return best


def summary(run):
    p = run["probes"]
    steps = p["steps"][()]
    val = run["training/val_loss"][()]
    out = {"val": float(val[-1]), "bits": float(val[-1]) / math.log(2)}
    kurt = groups(p, "kurtosis")
    site, k = max(((s, v[-1]) for s, v in kurt), key=lambda t: t[1])
    out["kurtosis_max"] = (float(k), site)  # at the last probe step
    out["kurtosis_peak"] = peak(p, "kurtosis", steps)  # over training
    blocks = [(s, v) for s, v in kurt if s.count(".") == 1]  # block outputs: "blocks.<l>"
    out["kurtosis_blocks"] = [float(v[-1]) for _, v in blocks]
    mm = groups(p, "max_median")
    site, v = max(((s, v[-1]) for s, v in mm), key=lambda t: t[1])
    out["max_median_max"] = (float(v), site)
    out["massive"] = int(sum(v[-1] for _, v in groups(p, "massive")))
    out["sink_max"] = max(float(v[-1].max()) for _, v in groups(p, "sink"))  # at the last probe step
    out["sink_peak"] = peak(p, "sink", steps)
    out["softmax_underflow"] = [float(v[-1]) for _, v in groups(p, "softmax_underflow")]
    gu = [(s, float(np.nanmean(v))) for s, v in groups(p, "grad_underflow") if not np.all(np.isnan(v))]
    if gu:
        out["grad_underflow_max"] = max(gu, key=lambda t: t[1])
        out["grad_underflow_mean"] = float(np.mean([v for _, v in gu]))
        out["grad_underflow_peak"] = peak(p, "grad_underflow", steps)
    gn = [(s, float(np.nanmin(v))) for s, v in groups(p, "grad_noise_ratio") if not np.all(np.isnan(v))]
    if gn:
        out["grad_noise_min"] = min(gn, key=lambda t: t[1])
    qe = groups(p, "quant_error")
    if qe:
        out["quant_error_first"] = [float(v[1]) for _, v in qe]  # step probes.every (step 0 is the init)
        out["quant_error_last"] = [float(v[-1]) for _, v in qe]
    return out


def main(paths):
    for path in paths:
        with h5py.File(path, "r") as f:
            print(f"== {path}")
            for rid, run in f["runs"].items():
                s = summary(run)
                line = f"{rid:22s} val {s['val']:.4f} nats ({s['bits']:.3f} bits)/byte"
                kp = s["kurtosis_peak"]
                line += f"  kurtosis at the end max {s['kurtosis_max'][0]:.1f} ({s['kurtosis_max'][1]})"
                line += f", peak {kp[0]:.2f} ({kp[1]}, step {kp[2]})"
                line += "  blocks " + " ".join(f"{v:.2f}" for v in s["kurtosis_blocks"])
                line += f"  max/median {s['max_median_max'][0]:.1f}  massive {s['massive']}"
                sp = s["sink_peak"]
                line += f"  sink at the end max {s['sink_max']:.3f}, peak {sp[0]:.3f} ({sp[1]}, step {sp[2]})"
                line += "  softmax underflow " + " ".join(f"{v:.3f}" for v in s["softmax_underflow"])
                if "grad_underflow_max" in s:
                    g = s["grad_underflow_max"]
                    gp = s["grad_underflow_peak"]
                    line += f"  grad underflow mean {s['grad_underflow_mean']:.4f} max {g[1]:.4f} ({g[0]})"
                    line += f", peak {gp[0]:.4f} ({gp[1]}, step {gp[2]})"
                if "grad_noise_min" in s:
                    line += f"  grad/noise min {s['grad_noise_min'][1]:.1f} ({s['grad_noise_min'][0]})"
                if "quant_error_first" in s:
                    line += "  quant_error by block, step 25: " + " ".join(f"{v:.4f}" for v in s["quant_error_first"])
                    line += ", last: " + " ".join(f"{v:.4f}" for v in s["quant_error_last"])
                print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
