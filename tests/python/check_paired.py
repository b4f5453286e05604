#!/usr/bin/python3
"""Outside reader of same-seed pairs: a training sweep over seeds, `decide` and `report` against h5py.

Runs `fp8lab-cli sweep CONFIG --seeds 1-3` on a tiny language-model config with an FP32 and an NVFP4
run (so six runs, ids <id>-s<seed>), runs it again (every run is skipped: resume), runs the same sweep
as two shards joined with `fp8lab-cli merge` (the same losses: the CPU backend is bit-reproducible),
then reads the session with h5py and recomputes, per seed, NVFP4's final validation loss minus
FP32's, their mean, sample standard deviation and 95 % t-interval (t_0.975,2 = 4.303 from the
NIST/SEMATECH e-Handbook table), and checks `decide --json`'s "paired" object, the per-seed lines of
`decide`, and the report's training row (its data-paired-* attributes).

Usage: check_paired.py --cli PATH/TO/fp8lab-cli --workdir DIR
Exit 0 when every check passes; 1 with a list of failures otherwise.
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

try:
    import h5py
except ImportError as e:  # a missing package fails the test with a message, never skips it
    print(f"FAIL: cannot import h5py ({e}); install Debian's python3-h5py and run with /usr/bin/python3",
          file=sys.stderr)
    sys.exit(1)

failures = []
checks = 0
T975_DF2 = 4.303  # NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.2


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0, f"{' '.join(cmd[1:4])} exit {p.returncode}: {p.stderr[-2000:]}")
    return p


def losses(path):
    """{recipe: {seed: final_val_loss}} of the training runs of a session, read with h5py."""
    out = {}
    with h5py.File(path, "r") as h:
        for rid, g in h["runs"].items():
            if g.attrs.get("type") != "training":
                continue
            c = json.loads(g.attrs["config"])
            recipe = "FP32 baseline" if c["precision"] == "fp32" else str(g.attrs.get("recipe", "?"))
            out.setdefault(recipe, {})[int(c["seed"])] = float(g["metrics"].attrs["final_val_loss"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    rnd = random.Random(5)
    words = ["float", "eight", "scale", "block", "tensor", "gradient", "weight", "loss", "the", "a", "of"]
    text = os.path.join(a.workdir, "text.txt")
    with open(text, "w") as f:
        f.write(" ".join(rnd.choice(words) for _ in range(6000)))
    cfg = os.path.join(a.workdir, "lm.json")
    with open(cfg, "w") as f:
        json.dump({"type": "training",
                   "defaults": {"model": {"kind": "transformer", "d_model": 32, "layers": 1, "heads": 2,
                                          "context": 16, "ffn_hidden": 64},
                                "data": {"text": text}, "steps": 40, "batch_size": 8,
                                "eval": {"every": 40, "batches": 4}, "probes": {"every": 0, "attention_every": 0},
                                "sample_bytes": 0, "threads": 1},
                   "runs": [{"id": "fp32", "precision": "fp32"},
                            {"id": "nvfp4", "precision": "fp8", "recipe": "te_nvfp4", "block_gemm": "core"}]}, f)
    s = os.path.join(a.workdir, "s.h5")
    p = run([a.cli, "sweep", cfg, "--seeds", "1-3", "--out", s, "-q"])
    if p.returncode != 0:
        return
    # Resume: every run is in the file with the same config, so nothing runs again.
    p = run([a.cli, "sweep", cfg, "--seeds", "1-3", "--out", s])
    check("6 grid point(s) already in" in p.stderr, f"the second sweep skips all 6 runs: {p.stderr[-500:]}")
    v = losses(s)
    check(sorted(v) == ["FP32 baseline", "te_nvfp4"], f"two recipes, got {sorted(v)}")
    check(all(sorted(x) == [1, 2, 3] for x in v.values()), f"seeds 1-3 of each: {v}")
    # Shards 0/2 and 1/2 merged: the same losses.
    sa, sb, sm = (os.path.join(a.workdir, n) for n in ("a.h5", "b.h5", "m.h5"))
    run([a.cli, "sweep", cfg, "--seeds", "1-3", "--shard", "0/2", "--out", sa, "-q"])
    run([a.cli, "sweep", cfg, "--seeds", "1-3", "--shard", "1/2", "--out", sb, "-q"])
    run([a.cli, "merge", sm, sa, sb])
    check(losses(sm) == v, f"merged shards give the same losses: {losses(sm)} vs {v}")

    base, nv = v["FP32 baseline"], v["te_nvfp4"]
    diffs = [nv[k] - base[k] for k in (1, 2, 3)]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 2)
    half = T975_DF2 * sd / math.sqrt(3)
    lo, hi = mean - half, mean + half

    p = run([a.cli, "decide", s, "--json"])
    if p.returncode == 0:
        d = json.loads(p.stdout)
        rows = [r for r in d["training"] if r["recipe"] == "te_nvfp4"]
        check(len(rows) == 1, "decide: one te_nvfp4 row")
        if rows:
            pj = rows[0].get("paired", {})
            check(pj.get("baseline") == "FP32 baseline", f"paired against the baseline: {pj.get('baseline')}")
            check(pj.get("n_pairs") == 3, f"3 pairs: {pj.get('n_pairs')}")
            tol = lambda x, y: abs(x - y) <= 1e-12 * max(1.0, abs(y))
            check(tol(pj.get("mean_diff", 0), mean), f"mean_diff {pj.get('mean_diff')} vs {mean}")
            check(tol(pj.get("ci_low", 0), lo), f"ci_low {pj.get('ci_low')} vs {lo}")
            check(tol(pj.get("ci_high", 0), hi), f"ci_high {pj.get('ci_high')} vs {hi}")
            per = {e["seed"]: e["diff"] for e in pj.get("per_seed", [])}
            check(sorted(per) == [1, 2, 3] and all(tol(per[k], diffs[k - 1]) for k in (1, 2, 3)),
                  f"per-seed differences {per} vs {diffs}")
            want = "worse" if lo > 0 else "better" if hi < 0 else "not distinguishable"
            check(rows[0].get("verdict", "").startswith(want), f"verdict {rows[0].get('verdict')} ({lo}, {hi})")
            print(f"NVFP4 − FP32 per seed {['%+.4f' % x for x in diffs]}: {mean:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    p = run([a.cli, "decide", s])
    check("per seed: seed 1 %+.4g, seed 2 %+.4g, seed 3 %+.4g" % tuple(diffs) in p.stdout,
          f"decide lists the per-seed differences: {p.stdout}")
    report = os.path.join(a.workdir, "report.html")
    run([a.cli, "report", s, "--out", report])
    try:
        root = ET.parse(report).getroot()
    except (ET.ParseError, FileNotFoundError) as e:
        check(False, f"the report does not parse: {e}")
        return
    ns = {"h": "http://www.w3.org/1999/xhtml"}
    rows = [r for r in root.findall(".//h:table[@class='training']/h:tr[@data-recipe]", ns)
            if r.get("data-recipe") == "te_nvfp4"]
    check(len(rows) == 1, "the report has a te_nvfp4 training row")
    if rows:
        r = rows[0]
        check(r.get("data-comparison") == "paired", f"report comparison {r.get('data-comparison')}")
        check(abs(float(r.get("data-paired-mean")) - mean) <= 1e-12, "report paired mean")
        check(abs(float(r.get("data-paired-lo")) - lo) <= 1e-12, "report paired lo")
        check(abs(float(r.get("data-paired-hi")) - hi) <= 1e-12, "report paired hi")
        check(r.get("data-n-pairs") == "3", "report n pairs")


main()
if failures:
    print(f"{len(failures)} of {checks} checks failed:")
    for f in failures:
        print("  FAIL:", f)
    sys.exit(1)
print(f"all {checks} checks passed")
