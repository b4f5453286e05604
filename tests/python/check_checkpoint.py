#!/usr/bin/python3
"""Outside reader of the FP8 checkpoints `fp8lab-cli checkpoint export` writes.

Trains a tiny MLP (784-130-10, 256 images, one epoch) with fp8lab-cli, exports its weights in both
layouts (per_tensor, block128) and reads the safetensors files with struct and json only: the
8-byte little-endian header length, the JSON header (dtype, shape, data_offsets in name order,
__metadata__) and the raw bytes. The expected codes and scales are computed here from the FP32
master weights read from the session with h5py, following the systems' rules:
  per_tensor (Transformer Engine current scaling): s = f32(448 / amax), weight_scale = f32(1 / s),
             code = E4M3FN_RNE(f32(w * s));
  block128 (DeepSeek-V3 / DeepGEMM 128x128): sf = f32(max(amax_block, 1e-4) / 448),
             weight_scale_inv = sf, code = E4M3FN_RNE(f32(w * f32(1 / sf))).
The E4M3FN decoder and the round-to-nearest-even encoder are written here from OCP OFP8 v1.0.
Usage: check_checkpoint.py --cli PATH --workdir DIR
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys

import h5py
import numpy as np


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def e4m3_decode(c):
    s = -1.0 if c & 0x80 else 1.0
    e = (c >> 3) & 0xF
    m = c & 0x7
    if e == 0xF and m == 0x7:
        return math.nan
    if e == 0:
        return s * m / 8.0 * 2.0 ** -6
    return s * (1 + m / 8.0) * 2.0 ** (e - 7)


# The non-negative finite E4M3FN codes by value (0x00..0x7E), for nearest-even rounding.
POS = [(e4m3_decode(c), c) for c in range(0x7F)]


def e4m3_encode(x):
    """Round to nearest, ties to the even code, saturating to ±448."""
    sign = 0x80 if (x < 0 or (x == 0 and math.copysign(1, x) < 0)) else 0
    a = min(abs(x), 448.0)
    best = None
    for v, c in POS:
        d = abs(v - a)
        if best is None or d < best[0] or (d == best[0] and c % 2 == 0):
            best = (d, c)
    return best[1] | sign


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    return n, header, raw[8 + n:]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    cfg = os.path.join(a.workdir, "train.json")
    with open(cfg, "w") as f:
        json.dump({"type": "training", "train_limit": 256, "test_limit": 100,
                   "runs": [{"id": "tiny", "precision": "fp32", "layers": [784, 130, 10], "epochs": 1,
                             "record_history": False}]}, f)
    h5 = os.path.join(a.workdir, "tiny.h5")
    if os.path.exists(h5):
        os.remove(h5)
    run([a.cli, "run", cfg, "--out", h5, "--quiet"])
    with h5py.File(h5, "r") as f:
        kernels = {l: np.asarray(f["runs/tiny/weights/%s/kernel" % l], dtype=np.float32) for l in ("fc1", "fc2")}
        biases = {l: np.asarray(f["runs/tiny/weights/%s/bias" % l], dtype=np.float32) for l in ("fc1", "fc2")}
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    for layout in ("per_tensor", "block128"):
        out = os.path.join(a.workdir, "model-%s.safetensors" % layout)
        run([a.cli, "checkpoint", "export", h5, "tiny", "--layout", layout, "--out", out])
        n, header, data = read_safetensors(out)
        check(n % 8 == 0, "%s: header length %d not a multiple of 8" % (layout, n))
        meta = header.pop("__metadata__", {})
        check(meta.get("layout") == ("per_tensor" if layout == "per_tensor" else "block128x128"),
              "%s: __metadata__ layout %r" % (layout, meta.get("layout")))
        check(meta.get("producer", "").startswith("fp8lab-cli"), "%s: __metadata__ producer" % layout)
        # data_offsets: contiguous, in name order, covering the data section exactly.
        names = sorted(header)
        pos = 0
        for name in names:
            b, e = header[name]["data_offsets"]
            check(b == pos, "%s: %s begins at %d, expected %d" % (layout, name, b, pos))
            pos = e
        check(pos == len(data), "%s: offsets end at %d, data has %d bytes" % (layout, pos, len(data)))
        sizes = {"F8_E4M3": 1, "F32": 4}
        for name in names:
            t = header[name]
            b, e = t["data_offsets"]
            check(e - b == sizes[t["dtype"]] * int(np.prod(t["shape"])), "%s: %s size" % (layout, name))
        for l in ("fc1", "fc2"):
            w = kernels[l].T  # nn.Linear weight [out, in]
            rows, cols = w.shape
            wt = header[l + ".weight"]
            check(wt["dtype"] == "F8_E4M3" and wt["shape"] == [rows, cols], "%s: %s.weight %r" % (layout, l, wt))
            b, e = wt["data_offsets"]
            codes = np.frombuffer(data[b:e], dtype=np.uint8).reshape(rows, cols)
            bt = header[l + ".bias"]
            b0, e0 = bt["data_offsets"]
            check(bt["dtype"] == "F32" and bt["shape"] == [rows], "%s: %s.bias %r" % (layout, l, bt))
            check(data[b0:e0] == biases[l].astype("<f4").tobytes(), "%s: %s.bias bytes" % (layout, l))
            if layout == "per_tensor":
                st = header[l + ".weight_scale"]
                check(st["dtype"] == "F32" and st["shape"] == [1], "%s: %s.weight_scale %r" % (layout, l, st))
                (scale,) = struct.unpack("<f", data[st["data_offsets"][0]:st["data_offsets"][1]])
                amax = float(np.max(np.abs(w)))
                s = f32(448.0 / amax)
                check(scale == f32(1.0 / s), "%s: %s scale %r, expected %r" % (layout, l, scale, f32(1.0 / s)))
                grid = [[(s, scale)]]
                br = bc = max(rows, cols)
            else:
                st = header[l + ".weight_scale_inv"]
                gr, gc = (rows + 127) // 128, (cols + 127) // 128
                check(st["dtype"] == "F32" and st["shape"] == [gr, gc], "%s: %s.weight_scale_inv %r" % (layout, l, st))
                sb, se = st["data_offsets"]
                stored = struct.unpack("<%df" % (gr * gc), data[sb:se])
                grid = []
                for i in range(gr):
                    row = []
                    for j in range(gc):
                        amax = float(np.max(np.abs(w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])))
                        sf = f32(f32(max(amax, f32(1e-4))) / 448.0)
                        check(stored[i * gc + j] == sf,
                              "%s: %s block (%d, %d) scale %r, expected %r" % (layout, l, i, j, stored[i * gc + j], sf))
                        row.append((f32(1.0 / sf), sf))
                    grid.append(row)
                br = bc = 128
            bad = 0
            for i in range(rows):
                for j in range(cols):
                    q, dq = grid[i // br][j // bc]
                    want = e4m3_encode(f32(float(w[i, j]) * q))
                    got = int(codes[i, j])
                    # decode(code) · scale, the weight the file gives, against the one computed here
                    if got != want or e4m3_decode(got) * dq != e4m3_decode(want) * dq:
                        bad += 1
            check(bad == 0, "%s: %s: %d of %d codes differ from E4M3FN_RNE(w * s)" % (layout, l, bad, rows * cols))
        # The CLI reads its own file back: listing names each weight's layout.
        listed = json.loads(run([a.cli, "checkpoint", "list", out, "--json"]))
        check([e["name"] for e in listed] == ["fc1.weight", "fc2.weight"], "%s: list %r" % (layout, listed))
        check(all(e["layout"] == meta.get("layout") for e in listed), "%s: listed layouts %r" % (layout, listed))

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("checkpoint reader: both layouts OK")


if __name__ == "__main__":
    main()
