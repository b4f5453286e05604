#!/usr/bin/python3
"""Outside reader of FP8 Lab session files: h5py reads what fp8lab-cli wrote.

Runs `fp8lab-cli run` on two small GEMM experiments, then opens the session with h5py (Debian's
python3-h5py, under /usr/bin/python3) and checks the layout documented in docs/session-format.md:
root and run attributes, dataset shapes and dtypes, units/meaning attributes, and values, against
what the app printed (`run --json`, `inspect --json`, `export --csv`) and against numbers
recomputed here independently (an FP8 decoder written from the OCP OFP8 spec, numpy matmul).

Usage: check_session.py --cli PATH/TO/fp8lab-cli --workdir DIR
Exit 0 when every check passes; 1 with a list of failures otherwise.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # a missing package fails the test with a message, never skips it
    print(f"FAIL: cannot import h5py/numpy ({e}); install Debian's python3-h5py "
          f"(apt-get install python3-h5py) and run with /usr/bin/python3", file=sys.stderr)
    sys.exit(1)

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


def decode_fp8(codes, fmt):
    """OCP OFP8 v1.0 decoding, written independently of FP8 Lab (table 1 of the spec)."""
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    if fmt == "E4M3FN":
        e, m = (c >> 3) & 0xF, c & 0x7
        val = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * np.exp2(e - 7.0))
        val = np.where((e == 15) & (m == 7), np.nan, val)
    elif fmt == "E5M2":
        e, m = (c >> 2) & 0x1F, c & 0x3
        val = np.where(e == 0, m / 4.0 * 2.0 ** -14, (1 + m / 4.0) * np.exp2(e - 15.0))
        val = np.where((e == 31) & (m == 0), np.inf, val)
        val = np.where((e == 31) & (m != 0), np.nan, val)
    else:
        raise ValueError(fmt)
    return sign * val


def expand_scales(scales, rows, cols, br, bc):
    return np.repeat(np.repeat(scales, br, axis=0), bc, axis=1)[:rows, :cols]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}", file=sys.stderr)
        sys.exit(1)
    return p.stdout


def check_kernel(a):
    """The kernel check (docs/gemm.md "Check my kernel in CI", docs/session-format.md "Kernel check"):
    a kernel's D written here with numpy, checked by `fp8lab-cli gemm --observed`, and the verdict
    read back with h5py. The operands are E4M3FN codes of the integers -4..4 with power-of-two
    scales, so numpy's float64 product is exact and its float32 rounding is the exact model's D."""
    kc = os.path.join(a.workdir, "kernel")
    os.makedirs(kc)
    h5 = os.path.join(kc, "check.h5")
    M, K, N = 32, 256, 24
    mag = np.array([0x00, 0x38, 0x40, 0x44, 0x48], np.uint8)  # E4M3FN 0, 1, 2, 3, 4 (OCP OFP8)
    va = (np.arange(M)[:, None] * 7 + np.arange(K)[None, :] * 3) % 9 - 4
    vb = (np.arange(K)[:, None] * 5 + np.arange(N)[None, :] * 11) % 9 - 4
    codes = lambda v: (mag[np.abs(v)] | np.where(v < 0, 0x80, 0)).astype(np.uint8)
    check(np.array_equal(decode_fp8(codes(va), "E4M3FN"), va), "kernel: E4M3FN codes of -4..4")
    sa = np.exp2((np.arange(M) % 5) - 3.0).astype(np.float32).reshape(M, 1)  # per row of A
    d = ((va.astype(np.float64) @ vb.astype(np.float64)) * sa.astype(np.float64) * 0.5).astype(np.float32)
    paths = {}
    for name, arr in (("a", codes(va)), ("sa", sa), ("b", codes(vb)), ("d", d)):
        paths[name] = os.path.join(kc, name + ".npy")
        np.save(paths[name], arr)
    bad = d.copy()
    bad[3, 5] = np.nextafter(bad[3, 5], np.float32(np.inf))
    paths["bad"] = os.path.join(kc, "bad.npy")
    np.save(paths["bad"], bad)
    base = [a.cli, "gemm", "--a-codes", paths["a"], "--a-scales", paths["sa"], "--a-block", f"1x{K}",
            "--b-codes", paths["b"], "--b-scales", "0.5", "--max-ulp", "0", "--fit-bits", "12..15", "--fit-groups", "32",
            "--backend", "cpu", "--out", h5, "--json"]
    p = subprocess.run(base + ["--observed", paths["d"], "--id", "kc"], capture_output=True, text=True)
    check(p.returncode == 0, f"kernel: a correct kernel exits 0, got {p.returncode}: {p.stderr[-400:]}")
    j = json.loads(p.stdout) if p.returncode == 0 else {}
    check(j.get("check", {}).get("passed") is True, "kernel: --json check.passed")
    p = subprocess.run(base + ["--observed", paths["bad"], "--id", "kc-bad"], capture_output=True, text=True)
    check(p.returncode == 1, f"kernel: one element one ULP off exits 1 with --max-ulp 0, got {p.returncode}")
    with h5py.File(h5, "r") as f:
        g = f["runs/kc"]
        c = g["check"]
        check(int(c.attrs["passed"]) == 1 and c.attrs["verdict"].startswith("PASS: 768 of 768"),
              f"kernel: stored verdict {c.attrs['verdict']!r}")
        check(c.attrs["reference"] == "exact", "kernel: reference attr")
        check(np.array_equal(g["observed/D"][()], d), "kernel: observed/D == the file's D")
        check(np.array_equal(g["check/D_reference"][()], d), "kernel: check/D_reference == numpy's exact D")
        check(g["check/ulps"].shape == (M, N) and not np.any(g["check/ulps"][()]), "kernel: check/ulps all 0")
        hist = g["check/ulp_histogram"][()]
        check(hist.dtype == np.int64 and int(hist[0]) == M * N and int(hist.sum()) == M * N, "kernel: ULP histogram")
        check(json.loads(g["check/ulp_histogram"].attrs["bin_labels"])[:3] == ["0", "1", "2"], "kernel: bin labels")
        names = json.loads(g["check/models"].attrs["names"])
        check(names[0] == "exact" and len(names) == g["check/models/identical"].shape[0], "kernel: models names")
        check(int(g["check/models/identical"][0]) == M * N, "kernel: the exact model reproduces every element")
        check(float(g["metrics"].attrs["check_passed"]) == 1.0, "kernel: metric check_passed")
        check(c.attrs["fit_verdict"].startswith("bit-identical to exact"), f"kernel: fit verdict {c.attrs['fit_verdict']!r}")
        w = json.loads(g.attrs["warnings"])
        deq = va * sa.astype(np.float64)
        want = f"A dequantized: [{deq.min():g}, {deq.max():g}], amax {np.abs(deq).max():g}"
        check(any(x["detail"].startswith(want) and x["severity"] == "info" for x in w), f"kernel: {want!r} in {w!r}")
        gb = f["runs/kc-bad"]
        cb = gb["check"]
        check(int(cb.attrs["passed"]) == 0 and cb.attrs["verdict"].startswith("FAIL"), "kernel: bad verdict stored")
        check((int(cb.attrs["first_row"]), int(cb.attrs["first_col"])) == (3, 5), "kernel: first differing element")
        u = gb["check/ulps"][()]
        check(float(u[3, 5]) == 1.0 and int(np.count_nonzero(u)) == 1, "kernel: the one ULP at (3, 5)")
        check(float(gb["metrics"].attrs["check_max_ulps"]) == 1.0, "kernel: metric check_max_ulps")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    h5 = os.path.join(a.workdir, "session.h5")

    configs = {
        "mx": {"type": "gemm", "name": "mx", "m": 48, "k": 96, "n": 40, "seed": 11, "format": "E4M3FN",
               "scaling": "mx_rceil", "distribution": "lognormal"},
        "pt": {"type": "gemm", "name": "pt", "m": 33, "k": 64, "n": 17, "seed": 12, "format_a": "E4M3FN",
               "format_b": "E5M2", "scaling": "te_current", "distribution": "normal", "tile": 8},
    }
    printed = {}
    for name, cfg in configs.items():
        path = os.path.join(a.workdir, name + ".json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        printed[name] = json.loads(run([a.cli, "run", path, "--out", h5, "--backend", "cpu", "--json", "--quiet"]))
        check(printed[name]["run"] == name, f"run id printed {printed[name]['run']} != {name}")
    inspected = json.loads(run([a.cli, "inspect", h5, "--json"]))

    with h5py.File(h5, "r") as f:
        # root
        check(f.attrs["application"] == "FP8 Lab", "root attr application")
        check(int(f.attrs["format_version"]) == 1, "root attr format_version == 1")
        check(f.attrs["format_version"].dtype == np.int64, "format_version is int64")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", f.attrs["created_utc"]) is not None, "created_utc ISO 8601")
        check(isinstance(f.attrs["app_version"], str) and f.attrs["app_version"], "app_version")
        check(sorted(f["runs"].keys()) == sorted(r["id"] for r in inspected["runs"]), "runs match inspect --json")

        for name, cfg in configs.items():
            g = f["runs"][name]
            m, k, n = cfg["m"], cfg["k"], cfg["n"]
            where = f"/runs/{name}"
            # run attributes
            check(g.attrs["type"] == "gemm", f"{where} type")
            check(json.loads(g.attrs["config"]) == cfg, f"{where} config JSON round trip")
            check(g.attrs["seed"].dtype == np.uint64 and int(g.attrs["seed"]) == cfg["seed"], f"{where} seed uint64")
            check(g.attrs["backend"] == "cpu", f"{where} backend")
            # every dataset has units and meaning
            def visit(pth, obj):
                if isinstance(obj, h5py.Dataset):
                    check("units" in obj.attrs and "meaning" in obj.attrs, f"{where}/{pth} units+meaning")
            g.visititems(visit)
            # shapes and dtypes
            expect = {"inputs/A": ((m, k), np.float32), "inputs/B": ((k, n), np.float32),
                      "output/D": ((m, n), np.float32), "reference/D": ((m, n), np.float64),
                      "reference/D_quantized_exact": ((m, n), np.float64),
                      "error/abs": ((m, n), np.float32), "error/rel": ((m, n), np.float32),
                      "quantized/A_codes": ((m, k), np.uint8), "quantized/B_codes": ((k, n), np.uint8),
                      "quantized/A_dequantized": ((m, k), np.float32)}
            for p, (shape, dt) in expect.items():
                check(p in g, f"{where}/{p} present")
                if p in g:
                    check(g[p].shape == shape, f"{where}/{p} shape {g[p].shape} != {shape}")
                    check(g[p].dtype == dt, f"{where}/{p} dtype {g[p].dtype} != {dt}")
            A, B, D = g["inputs/A"][()], g["inputs/B"][()], g["output/D"][()]
            ref, qex = g["reference/D"][()], g["reference/D_quantized_exact"][()]
            # quantized operands: decode(codes) * scale == dequantized copy, bit for bit
            deq, dec = {}, {}
            for op, fmt, rows, cols in (("A", cfg.get("format_a", cfg.get("format")), m, k),
                                        ("B", cfg.get("format_b", cfg.get("format")), k, n)):
                c = g[f"quantized/{op}_codes"]
                check(c.attrs["format"] == fmt, f"{where} {op}_codes format attr {c.attrs['format']} != {fmt}")
                br, bc = int(c.attrs["block_rows"]), int(c.attrs["block_cols"])
                s = g[f"quantized/{op}_scales"][()]
                check(s.shape == (-(-rows // br), -(-cols // bc)), f"{where} {op}_scales shape {s.shape}")
                full = expand_scales(s.astype(np.float64), rows, cols, br, bc)
                mine = (decode_fp8(c[()], fmt) * full).astype(np.float32)
                stored = g[f"quantized/{op}_dequantized"][()]
                check(np.array_equal(mine, stored, equal_nan=True), f"{where} {op} dequantized == decode(code)*scale")
                deq[op] = stored.astype(np.float64)
                dec[op] = decode_fp8(c[()], fmt)
                dec[op + "_scaled"] = dec[op] * full
                # per-block statistics (docs/session-format.md "Per-block statistics"), recomputed
                # here per block from inputs/<op> and the decoded codes
                bsg = g.get(f"block_stats/{op}")
                check(bsg is not None, f"{where} block_stats/{op} present")
                if bsg is not None:
                    x = g[f"inputs/{op}"][()].astype(np.float64)
                    gr_, gc_ = s.shape
                    check((int(bsg.attrs["grid_rows"]), int(bsg.attrs["grid_cols"])) == (gr_, gc_),
                          f"{where} block_stats/{op} grid")
                    check((int(bsg.attrs["block_rows"]), int(bsg.attrs["block_cols"])) == (br, bc),
                          f"{where} block_stats/{op} block")
                    xq = dec[op] * full
                    amax = np.zeros((gr_, gc_)); und = np.zeros((gr_, gc_), np.int64); sq = np.zeros((gr_, gc_))
                    for i in range(gr_):
                        for j in range(gc_):
                            xb = x[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
                            qb = xq[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
                            db = dec[op][i * br:(i + 1) * br, j * bc:(j + 1) * bc]
                            amax[i, j] = np.max(np.abs(xb))
                            und[i, j] = int(np.sum((xb != 0) & (db == 0)))
                            e = float(np.sum((qb - xb) ** 2))
                            sq[i, j] = math.inf if e == 0 else 10 * math.log10(float(np.sum(xb * xb)) / e)
                    check(bsg["map_amax"].shape == (1, gr_, gc_), f"{where} block_stats/{op}/map_amax shape")
                    check(np.array_equal(bsg["map_amax"][0].astype(np.float64), amax), f"{where} {op} block amax")
                    check(np.array_equal(bsg["map_underflow"][0], und), f"{where} {op} block underflow")
                    check(np.array_equal(bsg["map_scale"][0], s), f"{where} {op} block scale == quantized scales")
                    got = bsg["map_sqnr_db"][0].astype(np.float64)
                    fin = np.isfinite(sq)
                    check(np.array_equal(np.isinf(got), ~fin) and np.all(np.abs(got[fin] - sq[fin]) <= 1e-4),
                          f"{where} {op} block SQNR")
                    check(bsg["underflow_fraction"].shape == (1,), f"{where} {op} underflow_fraction shape")
                    nz = int(np.sum(x != 0))
                    check(abs(float(bsg["underflow_fraction"][0]) - und.sum() / nz) <= 1e-7,
                          f"{where} {op} underflow_fraction")
                    check(bsg["sqnr_db"].attrs["units"] == "dB", f"{where} {op} sqnr_db units")
                if cfg["scaling"].startswith("mx"):
                    check((br, bc) == ((1, 32) if op == "A" else (32, 1)), f"{where} MX block of {op}: {(br, bc)}")
                    sc = g[f"quantized/{op}_scale_codes"][()].astype(np.float64)
                    check(np.array_equal(np.exp2(sc - 127.0), s.astype(np.float64)), f"{where} {op} E8M0 scale codes")
                else:
                    check((br, bc) == (rows, cols), f"{where} per-tensor block of {op}")
            # reference = A·B (numpy, other summation order: tolerance ~ k ulps of the terms)
            tol = 1e-12 * np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64)) + 1e-300
            check(np.all(np.abs(ref - A.astype(np.float64) @ B.astype(np.float64)) <= tol), f"{where} reference/D == A@B")
            # quantized-exact (gemm.h, Exact model): per-tensor scales applied once at the end, in
            # double; MX block scales (powers of two) per K window: (dec(A)*sA) @ (dec(B)*sB).
            if cfg["scaling"].startswith("mx"):
                want = dec["A_scaled"] @ dec["B_scaled"]
            else:
                ca = float(g["quantized/A_scales"][0, 0]); cb = float(g["quantized/B_scales"][0, 0])
                want = (dec["A"] @ dec["B"]) * ca * cb
            tolq = 1e-12 * np.abs(want) + 1e-12 * (np.abs(dec["A_scaled"]) @ np.abs(dec["B_scaled"])) + 1e-300
            check(np.all(np.abs(qex - want) <= tolq), f"{where} quantized-exact == decoded product x scales")
            # D is float32 of a float32-accumulated product: within a few float32 ulps·k of quantized-exact
            check(np.all(np.abs(D.astype(np.float64) - qex) <= 4 * k * 2.0 ** -24 * (np.abs(deq["A"]) @ np.abs(deq["B"])) + 1e-30),
                  f"{where} output/D close to the quantized-exact product")
            # error maps
            ea = g["error/abs"][()]
            check(np.array_equal(ea, np.abs(D.astype(np.float64) - ref).astype(np.float32)), f"{where} error/abs == |D - ref|")
            tile = cfg.get("tile", 128)
            tm = g["error/tile_max_abs"][()]
            gr, gc = -(-m // min(tile, m)), -(-n // min(tile, n))
            check(tm.shape == (gr, gc), f"{where} tile_max_abs shape {tm.shape} != {(gr, gc)}")
            tr, tc = min(tile, m), min(tile, n)
            mx = np.array([[ea[i * tr:(i + 1) * tr, j * tc:(j + 1) * tc].max() for j in range(gc)] for i in range(gr)], np.float32)
            check(np.array_equal(tm, mx), f"{where} tile_max_abs == block max of error/abs")
            # metrics: stored == printed by `run --json` == `inspect --json`, and recomputed here
            met = g["metrics"].attrs
            ins = next(r for r in inspected["runs"] if r["id"] == name)
            for key, val in printed[name]["metrics"].items():
                check(key in met, f"{where} metric {key} stored")
                if key in met:
                    check(float(met[key]) == float(val), f"{where} metric {key}: stored {met[key]} != printed {val}")
                    check(float(ins["metrics"][key]["value"]) == float(val), f"{where} metric {key} inspect")
                    check(f"{key}.units" in met and f"{key}.meaning" in met, f"{where} metric {key} units/meaning")
            err = D.astype(np.float64) - ref
            sqnr = 10 * math.log10(float(np.sum(ref * ref)) / float(np.sum(err * err)))
            check(abs(sqnr - float(met["sqnr_db"])) <= 1e-9 * abs(sqnr), f"{where} sqnr_db {met['sqnr_db']} vs numpy {sqnr}")
            check(float(met["max_abs"]) == float(np.max(np.abs(err))), f"{where} max_abs")
            # partial read through h5py: a strided hyperslab equals the same slice of the whole map
            check(np.array_equal(g["error/abs"][1::5, 2::3], ea[1::5, 2::3]), f"{where} hyperslab read")

    # CSV export: float32 values written as shortest round-trip decimals read back exactly
    out_dir = os.path.join(a.workdir, "csv")
    run([a.cli, "export", h5, "--run", "pt", "--csv", out_dir])
    with open(os.path.join(out_dir, "output__D.csv")) as fcsv:
        rows = [[np.float32(float(x)) for x in r] for r in csv.reader(fcsv)]
    with h5py.File(h5, "r") as f:
        check(np.array_equal(np.array(rows, np.float32), f["runs/pt/output/D"][()]), "export --csv output/D exact")
        with open(os.path.join(out_dir, "config.json")) as fc:
            check(fc.read() == f["runs/pt"].attrs["config"], "export config.json == stored config text")

    # rerun reproduces every stored run bit for bit on the CPU backend
    for name in configs:
        rr = json.loads(run([a.cli, "rerun", h5, name, "--json", "--quiet"]))
        check(rr["identical"] is True and rr["datasets_compared"] >= 15 and not rr["differences"],
              f"rerun {name}: {rr}")

    # bad input at the CLI: clear message, exit code 2, nothing written
    bad = os.path.join(a.workdir, "not_hdf5.h5")
    with open(bad, "w") as fb:
        fb.write("plain text\n")
    p = subprocess.run([a.cli, "inspect", bad], capture_output=True, text=True)
    check(p.returncode == 2 and "not an HDF5 file" in p.stderr, f"inspect of a text file: rc {p.returncode}, {p.stderr!r}")
    p = subprocess.run([a.cli, "run", os.path.join(a.workdir, "pt.json"), "--out", bad + "/sub/x.h5", "--quiet"],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "write failed" in p.stderr, f"run to an unwritable path: rc {p.returncode}, {p.stderr!r}")
    before = open(h5, "rb").read()
    p = subprocess.run([a.cli, "merge", h5, h5, bad], capture_output=True, text=True)
    check(p.returncode == 2 and open(h5, "rb").read() == before, "merge with a bad input leaves the output untouched")

    check_kernel(a)

    if failures:
        print(f"FAIL: {len(failures)} of {checks} checks failed:", file=sys.stderr)
        for x in failures:
            print("  " + x, file=sys.stderr)
        return 1
    print(f"PASS: {checks} checks on {h5} (h5py {h5py.__version__}, numpy {np.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
