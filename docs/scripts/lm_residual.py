#!/usr/bin/python3
"""Where a language-model run's outliers sit: a float64 numpy forward of the run's final weights
(weights/<parameter>) over validation windows of the fortunes as documents (each window starting at
a BOS, as the trainer draws them), printing for every block output

  - the residual norm at position 0 (the BOS every window starts with), at later BOS tokens and at
    the other tokens;
  - the kurtosis of the outlier probe (He et al. 2024: per-channel energy over a global RMS) and the
    share of the energy in its largest channels, in the component shared by all tokens (the mean
    over tokens) and at position 0;
  - the count of massive activations (Sun et al. 2024: |x| > 20 and >= 1000 x the row's median |x|);

and for the input of each FFN down projection (the SwiGLU or GELU product) where its massive
activations sit: which bytes, which hidden units, the row median |x| that makes them massive, and how
much of its W_down row's energy the row's largest channel holds (how the down projection spreads
them over the residual stream).

Usage: lm_residual.py SESSION.h5 [RUN] [--windows N] [--seed S]   (RUN: fp32 by default)
Needs numpy and h5py (/usr/bin/python3 on the project's machines) and the Debian package fortunes.
The model's shape is read from the run's stored config; the forward follows
core/training/transformer.h (pre- or post-norm, LayerNorm or RMSNorm with eps 1e-5, GELU (tanh) or
SwiGLU, learned or no position embedding).
"""
import argparse
import json
import os
from collections import Counter

import h5py
import numpy as np

BOS = 2
FORTUNES = '/usr/share/games/fortunes'


def documents():
    """The fortunes as documents, as core/training/text_corpus.cpp splits them."""
    files = sorted(p for p in os.listdir(FORTUNES)
                   if '.' not in p and os.path.isfile(os.path.join(FORTUNES, p))
                   and not os.path.islink(os.path.join(FORTUNES, p)))
    docs = []
    for p in files:
        text = open(os.path.join(FORTUNES, p), 'rb').read()
        lines = text.split(b'\n')
        if text.endswith(b'\n'):
            lines = lines[:-1]
        cur = bytearray()
        for line in lines:
            if line == b'%':
                if cur:
                    docs.append(bytes(cur))
                cur = bytearray()
            else:
                cur += line.replace(bytes([BOS]), b'') + b'\n'
        if cur:
            docs.append(bytes(cur))
    return docs


def validation_windows(t, count, seed, val_fraction=0.1):
    docs = documents()
    ntrain = int(round(len(docs) * (1 - val_fraction)))
    val, starts = bytearray(), []
    for d in docs[ntrain:]:
        starts.append(len(val))
        val += bytes([BOS]) + d
    starts = [s for s in starts if s + t + 1 <= len(val)]
    pick = np.random.default_rng(seed).choice(len(starts), count, replace=False)
    return np.array([list(val[starts[i]:starts[i] + t]) for i in pick])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('session')
    ap.add_argument('run', nargs='?', default='fp32')
    ap.add_argument('--windows', type=int, default=64)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    f = h5py.File(a.session, 'r')
    g = f['runs/' + a.run]
    W = {}
    g['weights'].visititems(lambda n, o: W.__setitem__(n, o[()].astype(np.float64))
                            if isinstance(o, h5py.Dataset) else None)
    cfg = json.loads(g.attrs['config']) if 'config' in g.attrs else {}
    model = cfg.get('model', {})
    C = W['wte.weight'].shape[1]
    L = 1 + max(int(k.split('.')[1]) for k in W if k.startswith('blocks.'))
    H = int(model.get('heads', 4))
    T = int(model.get('context', 64))
    post = model.get('norm_position', 'pre') == 'post'
    rms = 'blocks.0.ln1.bias' not in W
    hs = C // H
    tok = validation_windows(T, a.windows, a.seed)
    B = tok.shape[0]
    is_bos = tok == BOS
    later_bos = is_bos.copy()
    later_bos[:, 0] = False
    ordinary = ~is_bos

    def norm(x, name):
        w = W[name + '.weight']
        if rms:
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * w + W[name + '.bias']

    def lin(x, name):
        y = x @ W[name + '.weight']
        return y + W[name + '.bias'] if name + '.bias' in W else y

    def massive(X):
        A = np.abs(X)
        med = np.sort(A, 1)[:, (A.shape[1] - 1) // 2]
        return (A > 20) & (A >= 1000 * med[:, None]), med

    def describe(x, label):
        X = x.reshape(-1, C)
        c = X - X.mean(1, keepdims=True)
        r = np.sqrt((c * c).mean()) + 1e-8
        m = ((c / r) ** 2).mean(0)
        e = (c ** 2).sum(0)
        top = np.argsort(-e)[:3]
        mu = X.mean(0)
        nrm = np.linalg.norm(x, axis=-1)
        later = nrm[later_bos].mean() if later_bos.any() else float('nan')
        x0 = x[:, 0].mean(0)
        print(f'{label}: kurtosis {m.var(ddof=1):.2f}, massive {int(massive(X)[0].sum())}; '
              f'|x| position 0 {nrm[:, 0].mean():.1f}, later BOS {later:.1f}, other tokens {nrm[ordinary].mean():.1f}; '
              f'largest channels {top.tolist()} hold {np.round(e[top] / e.sum(), 3).tolist()} of the energy; '
              f'shared component {(mu ** 2).sum() / (X ** 2).sum(1).mean():.2f} of it; '
              f'position 0: {(c.reshape(B, T, C)[:, 0] ** 2).sum() / e.sum():.3f} of it, '
              f'its largest channel {np.max(x0 ** 2) / np.sum(x0 ** 2):.2f} of its own')

    x = W['wte.weight'][tok] + (W['wpe.weight'][:T] if 'wpe.weight' in W else 0)
    mask = np.tril(np.ones((T, T), bool))
    print(f'{a.session} run {a.run}: {B} validation windows of {T} bytes, d_model {C}, {L} blocks, '
          f'{"post" if post else "pre"}-norm {"RMSNorm" if rms else "LayerNorm"}')
    describe(x, 'embedding')
    for l in range(L):
        b = f'blocks.{l}.'
        h = x if post else norm(x, b + 'ln1')
        qkv = lin(h, b + 'attn.qkv')
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, hs).transpose(0, 2, 1, 3) for i in range(3))
        s = np.where(mask, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs), -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        vn = np.linalg.norm(v, axis=-1)
        print(f'  block {l} attention: sink per head {np.round(p[:, :, 1:, 0].mean((0, 2)), 3).tolist()}, '
              f'|v| at position 0 {np.round(vn[:, :, 0].mean(0), 1).tolist()} against the others '
              f'{np.round(vn[:, :, 1:].mean((0, 2)), 1).tolist()}')
        x = x + lin((p @ v).transpose(0, 2, 1, 3).reshape(B, T, C), b + 'attn.out')
        if post:
            x = norm(x, b + 'ln1')
        h = x if post else norm(x, b + 'ln2')
        if b + 'ffn.gate.weight' in W:
            gate = lin(h, b + 'ffn.gate')
            act = gate / (1 + np.exp(-gate)) * lin(h, b + 'ffn.up')
        else:
            u = lin(h, b + 'ffn.up')
            act = 0.5 * u * (1 + np.tanh(0.7978845608028654 * (u + 0.044715 * u ** 3)))
        A = act.reshape(-1, act.shape[-1])
        is_massive, med = massive(A)
        rows, units = np.nonzero(is_massive)
        if len(rows):
            chars = Counter(bytes(tok.reshape(-1)[rows].tolist()).decode('latin1')).most_common(5)
            print(f'  block {l} ffn.down input: {len(rows)} massive, at position 0: {int((rows % T == 0).sum())}; '
                  f'bytes {chars}')
            Wd = W[b + 'ffn.down.weight']
            for u, n in Counter(units.tolist()).most_common(3):
                row = Wd[u] ** 2
                print(f'    hidden unit {u}: {n} of them, |x| up to {np.abs(A[:, u]).max():.1f}, row median |x| '
                      f'{np.median(med[rows[units == u]]):.3f}; its W_down row puts {row.max() / row.sum():.2f} '
                      f'of its energy in one channel')
        else:
            print(f'  block {l} ffn.down input: no massive activation')
        down = lin(act, b + 'ffn.down')
        describe(down, f'  block {l} FFN output')
        x = x + down
        if post:
            x = norm(x, b + 'ln2')
        describe(x, f'blocks.{l} (block output)')


if __name__ == '__main__':
    main()
