#!/usr/bin/python3
"""Outside reader of the FP8 checkpoints `fp8lab-cli checkpoint export` writes.

Trains a tiny MLP (784-130-10, 256 images, one epoch) and a tiny transformer language model (3
steps on a text file written here) with fp8lab-cli, exports their weights in both layouts
(per_tensor, block128) and reads the safetensors files with struct and json only: the
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


def check_fp8_weight(header, data, l, w, layout, check):
    """Checks the FP8 weight `l`.weight [out, in] of the file against w = the master weight [out, in]:
    its scale(s) by the layout's rule and every code as E4M3FN_RNE(w * s)."""
    rows, cols = w.shape
    wt = header[l + ".weight"]
    check(wt["dtype"] == "F8_E4M3" and wt["shape"] == [rows, cols], "%s: %s.weight %r" % (layout, l, wt))
    b, e = wt["data_offsets"]
    codes = np.frombuffer(data[b:e], dtype=np.uint8).reshape(rows, cols)
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
            bt = header[l + ".bias"]
            b0, e0 = bt["data_offsets"]
            check(bt["dtype"] == "F32" and bt["shape"] == [rows], "%s: %s.bias %r" % (layout, l, bt))
            check(data[b0:e0] == biases[l].astype("<f4").tobytes(), "%s: %s.bias bytes" % (layout, l))
            check_fp8_weight(header, data, l, w, layout, check)
        # The CLI reads its own file back: listing names each weight's layout.
        listed = json.loads(run([a.cli, "checkpoint", "list", out, "--json"]))
        check([e["name"] for e in listed] == ["fc1.weight", "fc2.weight"], "%s: list %r" % (layout, listed))
        check(all(e["layout"] == meta.get("layout") for e in listed), "%s: listed layouts %r" % (layout, listed))

    check_transformer(a, check)

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("checkpoint reader: both layouts OK, MLP and transformer")


def check_transformer(a, check):
    """A tiny transformer language model (2 blocks, d_model 32, FFN 160, untied embeddings, 3 steps
    on a text file written here) exported in both layouts: every Linear site's weight of the run's
    `sites` list but lm_head in FP8 [out, in] (the session stores [in, out]); the biases, the
    embeddings, the norms and lm_head (transposed to [V, C]) in F32, byte for byte as the session
    holds them; nothing else in the file."""
    text = os.path.join(a.workdir, "text.txt")
    with open(text, "w") as f:
        for i in range(200):
            f.write("The quick brown fox %d jumps over the lazy dog.\n" % i)
    cfg = os.path.join(a.workdir, "lm.json")
    with open(cfg, "w") as f:
        json.dump({"type": "training",
                   "runs": [{"id": "lm", "precision": "fp32",
                             "model": {"kind": "transformer", "d_model": 32, "layers": 2, "heads": 2, "context": 16,
                                       "ffn_hidden": 160, "tied_embeddings": False},
                             "data": {"text": text}, "steps": 3, "batch_size": 2, "eval": {"every": 3, "batches": 1},
                             "probes": {"every": 0, "attention_every": 0}, "sample_bytes": 0}]}, f)
    h5 = os.path.join(a.workdir, "lm.h5")
    if os.path.exists(h5):
        os.remove(h5)
    run([a.cli, "run", cfg, "--out", h5, "--quiet"])
    with h5py.File(h5, "r") as f:
        g = f["runs/lm"]
        sites = g.attrs["sites"]
        sites = (sites.decode() if isinstance(sites, bytes) else str(sites)).split(",")
        params = {k: np.asarray(v, dtype=np.float32) for k, v in g["weights"].items()}
    linear = [s for s in sites if s + ".weight" in params and s != "lm_head"]
    check(linear == ["blocks.0.attn.qkv", "blocks.0.attn.out", "blocks.0.ffn.up", "blocks.0.ffn.down",
                     "blocks.1.attn.qkv", "blocks.1.attn.out", "blocks.1.ffn.up", "blocks.1.ffn.down"],
          "transformer: Linear sites %r" % linear)
    for layout in ("per_tensor", "block128"):
        out = os.path.join(a.workdir, "lm-%s.safetensors" % layout)
        run([a.cli, "checkpoint", "export", h5, "lm", "--layout", layout, "--out", out])
        n, header, data = read_safetensors(out)
        meta = header.pop("__metadata__", {})
        check(meta.get("model") == "transformer" and meta.get("tied_embeddings") == "false",
              "transformer %s: __metadata__ %r" % (layout, meta))
        check(meta.get("quantized_modules") == ",".join(linear), "transformer %s: quantized_modules" % layout)
        want = set()
        for s in linear:
            w = params[s + ".weight"].T  # [in, out] -> nn.Linear's [out, in]
            check_fp8_weight(header, data, s, w, layout, check)
            want |= {s + ".weight", s + (".weight_scale" if layout == "per_tensor" else ".weight_scale_inv")}
        for name, v in params.items():
            if name in (s + ".weight" for s in linear):
                continue
            want.add(name)
            t = header.get(name)
            if t is None:
                check(False, "transformer %s: %s missing" % (layout, name))
                continue
            if name == "lm_head.weight":
                v = v.T  # [C, V] -> [V, C]
            check(t["dtype"] == "F32" and t["shape"] == list(v.shape), "transformer %s: %s %r" % (layout, name, t))
            b, e = t["data_offsets"]
            check(data[b:e] == np.ascontiguousarray(v).astype("<f4").tobytes(),
                  "transformer %s: %s bytes" % (layout, name))
        check(set(header) == want, "transformer %s: tensors %r" % (layout, sorted(set(header) ^ want)))
        check("wte.weight" in want and "blocks.1.ln2.bias" in want and "lm_head.weight" in want,
              "transformer %s: embeddings, norms, head" % layout)
        listed = json.loads(run([a.cli, "checkpoint", "list", out, "--json"]))
        check(sorted(e["name"] for e in listed) == sorted(s + ".weight" for s in linear),
              "transformer %s: list %r" % (layout, listed))


if __name__ == "__main__":
    main()
