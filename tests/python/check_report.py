#!/usr/bin/python3
"""Outside reader of FP8 Lab session reports: the report's tables against the session, read with h5py.

Runs `fp8lab-cli sweep` on a small grid (four recipes, two of them A:B pairs or NVFP4, x 3 seeds),
`fp8lab-cli report` on the session, then parses the report with Python's XML parser (the report is
well-formed XHTML) and checks, against numbers recomputed here from the session's metrics read with
h5py: each recipe's mean, sample standard deviation and 95 % half-width (t_0.975,2 = 4.303 from the
NIST/SEMATECH e-Handbook table), the rank by the tie rule (1 + recipes whose whole interval is
better), the bytes of A and B with their scales for the float32-scaled recipes (worked out here from
the layouts), and that the file needs nothing outside itself; `fp8lab-cli decide` (its --json and its
text lines) gives the same means, half-widths and ranks. With --pdf-ok, `report --out x.pdf`
(drawn by fp8lab-render) must give a PDF.

The training side: `fp8lab-cli sweep --seeds 1-2` of a tiny language model in FP32, NVFP4 and
DeepSeek-V3's recipe (1x128 / 128x128 float32 scales), then the report's training table and figures
against the session: each recipe's cost (bytes per element of the fprop pair with its scales at
4096x4096 . 4096x4096, worked out here from the layouts), the loss curves (per step, the mean over
seeds and the lowest and highest seed) and the same-seed differences to FP32 per step, the advice
hint naming this session's own run; `run` prints its results on stdout.

Usage: check_report.py --cli PATH/TO/fp8lab-cli --workdir DIR [--pdf-ok]
Exit 0 when every check passes; 1 with a list of failures otherwise.
"""
import argparse
import json
import math
import os
import re
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


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


CONFIG = {
    "type": "gemm", "m": 32, "k": 256, "n": 32,
    "a": {"distribution": "channel_outliers", "outlier_channels": 2, "outlier_factor": 40},
    "b": {"distribution": "channel_outliers", "outlier_channels": 2, "outlier_factor": 40},
    "sweep": {"scalings": ["te_current", "per_row", "deepgemm_1x128:deepgemm_128x128", "nvfp4_te"],
              "seeds": [1, 2, 3]},
}
T975_DF2 = 4.303  # NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.2


def float32_scale_bytes(scaling, rows, cols, is_a):
    """Scales of a float32-scaled operand as cuBLASLt lays them out (CUBLASLT-FP8.md 3.1)."""
    k, outer = (cols, rows) if is_a else (rows, cols)
    if scaling == "te_current":
        return 4
    if scaling == "per_row":
        return 4 * outer
    if scaling == "deepgemm_1x128":
        return 4 * math.ceil(k / 128) * outer
    if scaling == "deepgemm_128x128":
        ld = math.ceil(math.ceil(k / 128) / 4) * 4
        return 4 * ld * math.ceil(outer / 128)
    return None


def fprop_bytes_per_element(recipe):
    """Bytes per element of a 4096x4096 activation and weight with their scales (cuBLASLt layouts)."""
    s = 4096
    if recipe == "deepseek_v3":  # 1x128 float32 along K; 128x128 float32 tiles, K blocks padded to 4
        a = s * s + 4 * (s // 128) * s
        b = s * s + 4 * (math.ceil((s // 128) / 4) * 4) * (s // 128)
    elif recipe == "te_nvfp4":  # E2M1 packed; E4M3 1x16 scales in [roundup(outer,128), roundup(K/16,4)]
        a = s * s // 2 + s * (s // 16) + 4  # + the float32 tensor scale
        b = a  # 16x16 weight tiles are stored as their 1x16 grid
    else:
        return None
    return (a + b) / (2 * s * s)


def training_part(a):
    rnd = __import__("random").Random(7)
    words = ["float", "eight", "scale", "block", "tensor", "gradient", "weight", "loss", "the", "a", "of"]
    text = os.path.join(a.workdir, "text.txt")
    with open(text, "w") as f:
        f.write(" ".join(rnd.choice(words) for _ in range(6000)))
    defaults = {"model": {"kind": "transformer", "d_model": 32, "layers": 1, "heads": 2, "context": 16,
                          "ffn_hidden": 64},
                "data": {"text": text}, "steps": 30, "batch_size": 8, "eval": {"every": 30, "batches": 2},
                "probes": {"every": 0, "attention_every": 0}, "sample_bytes": 0, "threads": 1}
    cfg = os.path.join(a.workdir, "lm.json")
    with open(cfg, "w") as f:
        json.dump({"type": "training", "defaults": defaults,
                   "runs": [{"id": "fp32", "precision": "fp32"},
                            {"id": "nvfp4", "precision": "fp8", "recipe": "te_nvfp4", "block_gemm": "core"},
                            {"id": "dsv3", "precision": "fp8", "recipe": "deepseek_v3"}]}, f)
    session = os.path.join(a.workdir, "lm.h5")
    report = os.path.join(a.workdir, "lm-report.html")
    for cmd in ([a.cli, "sweep", cfg, "--seeds", "1-2", "--out", session, "-q"],
                [a.cli, "report", session, "--out", report]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, f"{' '.join(cmd[1:3])} exit {p.returncode}: {p.stderr}")
        if p.returncode != 0:
            return
    # The session: each recipe's per-step loss per seed.
    loss = {}
    with h5py.File(session, "r") as h:
        for rid, g in h["runs"].items():
            if g.attrs.get("type") != "training":
                continue
            c = json.loads(g.attrs["config"])
            rec = "FP32 baseline" if c.get("precision") == "fp32" else (
                c["recipe"] if isinstance(c["recipe"], str) else c["recipe"]["name"])
            loss.setdefault(rec, {})[int(c["seed"])] = [float(x) for x in g["training/loss"][()]]
    check(sorted(loss) == ["FP32 baseline", "deepseek_v3", "te_nvfp4"], f"three recipes: {sorted(loss)}")
    check(all(sorted(v) == [1, 2] for v in loss.values()), "seeds 1 and 2 of each")
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError as e:
        check(False, f"the training report is not well-formed XML: {e}")
        return
    ns = {"h": "http://www.w3.org/1999/xhtml", "s": "http://www.w3.org/2000/svg"}
    rows = root.findall(".//h:table[@class='training']/h:tr[@data-recipe]", ns)
    check(len(rows) == 3, f"3 training rows, got {len(rows)}")
    for r in rows:
        label = r.get("data-recipe")
        bpe = float(r.get("data-bytes-per-element"))
        want = 4.0 if label == "FP32 baseline" else fprop_bytes_per_element(label)
        check(want is not None and abs(bpe - want) <= 1e-12 * want, f"{label}: bytes/element {bpe} vs {want}")
        cells = ["".join(td.itertext()) for td in r.findall("h:td", ns)]
        if want is not None:
            check("%.4f" % want in cells, f"{label}: a cell prints {'%.4f' % want}: {cells}")
    native = {r.get("data-recipe"): r.get("data-native") for r in rows}
    check(native.get("deepseek_v3", "").startswith("Hopper"), f"deepseek_v3 native: {native.get('deepseek_v3')}")
    check(native.get("te_nvfp4") == "Blackwell", f"te_nvfp4 native: {native.get('te_nvfp4')}")
    # The loss curves: per recipe and step, the mean over the seeds and the lowest / highest seed.
    curves = root.findall(".//s:svg[@class='curves']", ns)
    check(len(curves) == 2, f"two curve charts (loss, Δ vs FP32), got {len(curves)}")
    if len(curves) == 2:
        for chart, delta in ((curves[0], False), (curves[1], True)):
            lines = {pl.get("data-recipe"): pl for pl in chart.findall(".//s:polyline[@class='curve']", ns)}
            want_recipes = ["deepseek_v3", "te_nvfp4"] + ([] if delta else ["FP32 baseline"])
            check(sorted(lines) == sorted(want_recipes), f"curves {sorted(lines)} (delta {delta})")
            for rec, pl in lines.items():
                per_seed = [loss[rec][s] for s in (1, 2)]
                if delta:
                    per_seed = [[x - y for x, y in zip(loss[rec][s], loss["FP32 baseline"][s])] for s in (1, 2)]
                got = {k: [float(x) for x in pl.get("data-" + k).split()] for k in ("x", "mean", "lo", "hi")}
                n = len(per_seed[0])
                check(got["x"] == [float(i + 1) for i in range(n)], f"{rec}: a point per step (bin 1)")
                check(pl.get("data-seeds") == "2", f"{rec}: 2 seeds")
                for i in range(min(n, len(got["mean"]))):
                    v = [p[i] for p in per_seed]
                    ok = (abs(got["mean"][i] - sum(v) / 2) <= 1e-12 * max(1.0, abs(sum(v))) and
                          got["lo"][i] == min(v) and got["hi"][i] == max(v))
                    if not ok:
                        check(False, f"{rec} step {i + 1}: {got['mean'][i]} [{got['lo'][i]}, {got['hi'][i]}] vs {v}")
                        break
                else:
                    check(len(got["mean"]) == n, f"{rec}: {n} points")
        check(curves[0].find(".//s:polygon[@class='band']", ns) is not None, "a seed band")
    text = open(report, encoding="utf-8").read()
    check("fp8lab-cli export " + session in text and "default.json" not in text,
          "the advice hint advises this session's own run, not the MLP's default.json")
    p = subprocess.run([a.cli, "decide", session], capture_output=True, text=True)
    check("fp8lab-cli export " + session in p.stdout and "default.json" not in p.stdout,
          f"decide's advice hint names this session: {p.stdout[-600:]}")
    check("B/elem" in p.stdout, "decide prints the training recipes' cost")
    d = json.loads(subprocess.run([a.cli, "decide", session, "--json"], capture_output=True, text=True).stdout)
    for r in d["training"]:
        want = fprop_bytes_per_element(r["recipe"])
        if want is not None:
            check(abs(r["cost"]["bytes_per_element"] - want) <= 1e-12 * want, f"decide --json {r['recipe']} cost")
    # The advice the hint asks for, run as the hint says (10 steps, 2 seeds to stay short), and its
    # table in the report against the session's advice datasets.
    exported = os.path.join(a.workdir, "run-nvfp4-s1")
    adv = os.path.join(a.workdir, "advice.h5")
    adv_report = os.path.join(a.workdir, "advice-report.html")
    for cmd in ([a.cli, "export", session, "--run", "nvfp4-s1", "--csv", exported],
                [a.cli, "advise", os.path.join(exported, "config.json"), "--steps", "10", "--seeds", "2",
                 "--out", adv], [a.cli, "report", adv, "--out", adv_report]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, f"{' '.join(cmd[1:3])} exit {p.returncode}: {p.stderr[-400:]}")
        if p.returncode != 0:
            break
        if cmd[1] == "advise":
            # stderr is a pipe here, not a terminal: one line as each run of the sweep starts
            started = re.findall(r"^advise: +\d+% (\S+)$", p.stderr, re.M)
            check(len(started) >= 2 and len(set(started)) == len(started),
                  f"advise without a terminal says each run as it starts: {started} in {p.stderr[-300:]!r}")
    else:
        with h5py.File(adv, "r") as h:
            g = next(g for g in h["runs"].values() if g.attrs.get("type") == "advice")
            groups = g.attrs["groups"].split(",")
            want = {k: [float(x) for x in g["advice/" + k][()]] for k in ("delta", "ci_low", "ci_high")}
        adv_root = ET.parse(adv_report).getroot()
        # The advice sweep's runs with a precision policy run in mixed precisions: no single cost.
        for r in adv_root.findall(".//h:table[@class='training']/h:tr[@data-recipe]", ns):
            if "+ policy" in r.get("data-recipe"):
                check(r.get("data-bytes-per-element") == "nan", f"{r.get('data-recipe')}: no cost with a policy")
        rows = adv_root.findall(".//h:table[@class='advice']/h:tr[@data-group]", ns)
        check([r.get("data-group") for r in rows] == groups, f"advice rows {[r.get('data-group') for r in rows]}")
        for r, i in zip(rows, range(len(groups))):
            for k, attr in (("delta", "data-delta"), ("ci_low", "data-ci-low"), ("ci_high", "data-ci-high")):
                check(abs(float(r.get(attr)) - want[k][i]) <= 1e-6 * max(1e-3, abs(want[k][i])),
                      f"advice {groups[i]} {k}: {r.get(attr)} vs {want[k][i]}")
    # `run` prints each run's result on stdout (a pipe gets it), its progress on stderr.
    one = os.path.join(a.workdir, "one.json")
    with open(one, "w") as f:
        json.dump(dict(defaults, type="training", id="one", precision="fp8", recipe="deepseek_v3", steps=4,
                       eval={"every": 4, "batches": 2}), f)
    p = subprocess.run([a.cli, "run", one, "--out", os.path.join(a.workdir, "one.h5")], capture_output=True, text=True)
    check(p.returncode == 0 and "one: validation loss" in p.stdout,
          f"run prints its result on stdout: {p.stdout!r} / {p.stderr[-300:]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--pdf-ok", action="store_true")
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cfg = os.path.join(a.workdir, "sweep.json")
    with open(cfg, "w") as f:
        json.dump(CONFIG, f)
    session = os.path.join(a.workdir, "s.h5")
    report = os.path.join(a.workdir, "report.html")
    for cmd in ([a.cli, "sweep", cfg, "--out", session, "-q"], [a.cli, "report", session, "--out", report]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, f"{' '.join(cmd[1:3])} exit {p.returncode}: {p.stderr}")
        if p.returncode != 0:
            return

    # The session, read here.
    values = {}
    with h5py.File(session, "r") as h:
        for rid, g in h["runs"].items():
            if g.attrs.get("type") != "gemm":
                continue
            c = json.loads(g.attrs["config"])
            label = c["scaling"] + (":" + c["scaling_b"] if "scaling_b" in c else "")
            fa, fb = c["format_a"], c["format_b"]
            label += " · " + fa + (":" + fb if fb != fa else "")
            values.setdefault(label, []).append(float(g["metrics"].attrs["sqnr_db"]))
    check(len(values) == 4, f"4 recipes in the session, got {sorted(values)}")

    # The report, parsed as XML.
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError as e:
        check(False, f"the report is not well-formed XML: {e}")
        return
    ns = {"h": "http://www.w3.org/1999/xhtml"}
    text = open(report, encoding="utf-8").read()
    check("<script" not in text and "<link" not in text, "no scripts or links")
    check('src="http' not in text and "href=\"http" not in text, "no remote sources")
    check(root.find(".//{http://www.w3.org/2000/svg}svg") is not None, "an inline SVG figure")
    rows = root.findall(".//h:table[@class='ranking']/h:tr[@data-recipe]", ns)
    check(len(rows) == 4, f"4 ranking rows, got {len(rows)}")
    stats = {}
    for label, v in values.items():
        n = len(v)
        mean = sum(v) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
        stats[label] = (mean, sd, T975_DF2 * sd / math.sqrt(n))
    for r in rows:
        label = r.get("data-recipe")
        if label not in stats:
            check(False, f"report row {label!r} is not a recipe of the session")
            continue
        mean, sd, half = stats[label]
        cells = ["".join(td.itertext()) for td in r.findall("h:td", ns)]
        check(abs(float(r.get("data-mean")) - mean) <= 1e-12 * abs(mean), f"{label}: mean {r.get('data-mean')} vs {mean}")
        check(abs(float(r.get("data-sd")) - sd) <= 1e-9 * sd, f"{label}: sd {r.get('data-sd')} vs {sd}")
        check(abs(float(r.get("data-half")) - half) <= 1e-9 * half, f"{label}: half {r.get('data-half')} vs {half}")
        check(r.get("data-n") == "3", f"{label}: n")
        decimals = max(0, 1 - math.floor(math.log10(half)))  # half to 2 significant digits, mean alike
        check(cells[2] == "%.*f ± %.*f" % (decimals, mean, decimals, half), f"{label}: cell {cells[2]!r}")
        better = sum(1 for o, (m, _, hw) in stats.items() if m - hw > mean + half)
        check(int(r.get("data-rank")) == better + 1, f"{label}: rank {r.get('data-rank')} vs {better + 1}")
        parts = label.split(" · ")[0].split(":")
        sa, sb = parts[0], parts[-1]
        ba = float32_scale_bytes(sa, 32, 256, True)
        bb = float32_scale_bytes(sb, 256, 32, False)
        if ba is not None and bb is not None:
            want = 32 * 256 * 2 + ba + bb
            check(r.get("data-bytes") == str(want), f"{label}: bytes {r.get('data-bytes')} vs {want}")
    # `fp8lab-cli decide`: the same recipes, means, intervals and ranks as JSON, and as text lines.
    p = subprocess.run([a.cli, "decide", session, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"decide --json exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        d = json.loads(p.stdout)
        check(d["gemm_metric"] == "sqnr_db" and d["gemm_higher_is_better"], "decide ranks by the SQNR of D")
        check(sorted(r["recipe"] for r in d["gemm"]) == sorted(stats), "decide: the session's recipes")
        for r in d["gemm"]:
            if r["recipe"] not in stats:
                continue
            mean, sd, half = stats[r["recipe"]]
            check(abs(r["mean"] - mean) <= 1e-12 * abs(mean), f"decide {r['recipe']}: mean")
            check(abs(r["half_width_95"] - half) <= 1e-9 * half, f"decide {r['recipe']}: half-width")
            better = sum(1 for o, (m, _, hw) in stats.items() if m - hw > mean + half)
            check(r["rank"] == better + 1, f"decide {r['recipe']}: rank {r['rank']} vs {better + 1}")
    p = subprocess.run([a.cli, "decide", session], capture_output=True, text=True)
    check(p.returncode == 0, f"decide exit {p.returncode}: {p.stderr}")
    for label, (mean, sd, half) in stats.items():
        decimals = max(0, 1 - math.floor(math.log10(half)))
        want = "%s %s" % (label, "%.*f ± %.*f" % (decimals, mean, decimals, half))
        line = next((l for l in p.stdout.splitlines() if label + " " in l), "")
        check(" ".join(line.split()[2:]).startswith(want) or " ".join(line.split()[1:]).startswith(want),
              f"decide prints {want!r}: {line!r}")
    if a.pdf_ok:
        pdf = os.path.join(a.workdir, "report.pdf")
        p = subprocess.run([a.cli, "report", session, "--out", pdf], capture_output=True, text=True)
        check(p.returncode == 0, f"report --out x.pdf exit {p.returncode}: {p.stderr}")
        if p.returncode == 0:
            with open(pdf, "rb") as f:
                head = f.read(5)
            check(head == b"%PDF-", f"the PDF starts with {head!r}")
            check(os.path.getsize(pdf) > 2000, "the PDF has content")
    training_part(a)


main()
if failures:
    print(f"{len(failures)} of {checks} checks failed:")
    for f in failures:
        print("  FAIL:", f)
    sys.exit(1)
print(f"all {checks} checks passed")
