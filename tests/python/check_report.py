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

Usage: check_report.py --cli PATH/TO/fp8lab-cli --workdir DIR [--pdf-ok]
Exit 0 when every check passes; 1 with a list of failures otherwise.
"""
import argparse
import json
import math
import os
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


main()
if failures:
    print(f"{len(failures)} of {checks} checks failed:")
    for f in failures:
        print("  FAIL:", f)
    sys.exit(1)
print(f"all {checks} checks passed")
