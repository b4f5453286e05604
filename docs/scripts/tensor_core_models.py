#!/usr/bin/env python3
"""Bit-exact reference models of GPU tensor-core FP8 dot-product-accumulate.

Standard library only (no numpy needed). All arithmetic is exact integer
arithmetic; every model returns IEEE binary32 bit patterns.

Usage
  tensor_core_models.py check  [DATA_DIR]   # run the measured presets on the six
                                            # data files (default tests/data/tensor_core)
  tensor_core_models.py sweep  [DATA_DIR]   # show which alternative parameters fail
  tensor_core_models.py convert MATLAB_REPO_DIR OUT_DIR
                                            # rebuild the data files from a checkout of
                                            # North-numerical-computing/MATLAB-tensor-core
  tensor_core_models.py selftest            # small sanity tests of the MMA-Sim-only presets
  tensor_core_models.py vectors [FILE]      # test vectors of the instructions without measured data
                                            # (tests/data/tensor_core/mmasim_rules_vectors.txt)

Spec: docs/scripts/tensor_core_models.md. Sources:
  MATLAB-tensor-core @ b12b5a700957655375a1b0c1d0c26e76065da015 (models/*.m,
      models/tools/Generic_BFMA_TC.m) and its model_validation/ data;
  microsoft/MMA-Sim @ c78513835c8b2ae61b35062afce4c4255bc6901c
      (mmasim/simulator/{nv_ptx,amd,arithmetic}.py).
"""
import os
import struct
import sys

# ----------------------------------------------------------------------------
# Formats.  (exp_bits, man_bits, bias, kind)  kind: 'ocp_e4m3' (no inf, S.1111.111 = NaN),
# 'ieee' (E5M2: inf/NaN at max exponent), 'fnuz' (AMD: 0x80 = NaN, no inf, no -0),
# 'e2m1' (no inf/NaN), 'ue8m0' (2^(code-127), 0xFF = NaN), 'ue4m3' (E4M3 magnitude).
# ----------------------------------------------------------------------------
FORMATS = {
    'e4m3':     (4, 3, 7, 'ocp_e4m3'),
    'e5m2':     (5, 2, 15, 'ieee'),
    'e4m3fnuz': (4, 3, 8, 'fnuz'),
    'e5m2fnuz': (5, 2, 16, 'fnuz'),
    'e2m1':     (2, 1, 1, 'e2m1'),
}
NAN32 = 0x7FFFFFFF          # NVIDIA canonical NaN as produced by MMA-Sim nv_fused_dot_add
INF32 = 0x7F800000


class Val:
    """Exact decoded operand: value = (-1)^s * M * 2^(e - mb);  e = max(floor(log2|x|), emin),
    so M < 2^(mb+1) and M < 2^mb for subnormals.  special in (None, 'nan', 'inf')."""
    __slots__ = ('s', 'M', 'e', 'mb', 'special')

    def __init__(self, s, M, e, mb, special=None):
        self.s, self.M, self.e, self.mb, self.special = s, M, e, mb, special


def decode_small(code, fmt):
    eb, mb, bias, kind = FORMATS[fmt]
    nbits = 1 + eb + mb
    s = code >> (nbits - 1)
    E = (code >> mb) & ((1 << eb) - 1)
    f = code & ((1 << mb) - 1)
    emin = 1 - bias
    if kind == 'fnuz' and code == 0x80:
        return Val(0, 0, emin, mb, 'nan')
    if kind == 'ocp_e4m3' and E == 15 and f == 7:
        return Val(s, 0, emin, mb, 'nan')
    if kind == 'ieee' and E == (1 << eb) - 1:
        return Val(s, 0, emin, mb, 'nan' if f else 'inf')
    if E == 0:
        return Val(s, f, emin, mb)
    return Val(s, f | (1 << mb), E - bias, mb)


def decode_f32(bits):
    s = bits >> 31
    E = (bits >> 23) & 255
    f = bits & 0x7FFFFF
    if E == 255:
        return Val(s, 0, -126, 23, 'nan' if f else 'inf')
    if E == 0:
        return Val(s, f, -126, 23)
    return Val(s, f | 0x800000, E - 127, 23)


def decode_scale(code, stype):
    """Block scale -> (sig Val).  ue8m0: 2^(code-127) (0xFF NaN); ue4m3: |E4M3| (sign ignored,
    MMA-Sim takes abs())."""
    if stype == 'ue8m0':
        if code == 0xFF:
            return Val(0, 0, 0, 0, 'nan')
        return Val(0, 1, code - 127, 0)
    v = decode_small(code & 0x7F, 'e4m3')
    return v


def f32_value_to_code(bits, fmt):
    """Encode an exactly representable float32 value (bits) as the FP8 code; raises if inexact."""
    eb, mb, bias, kind = FORMATS[fmt]
    for code in range(256):
        v = decode_small(code, fmt)
        if v.special:
            continue
        val = to_f32(-v.M if v.s else v.M, v.e - v.mb, 23, 'rne') if v.M else v.s << 31
        if val == bits:
            return code
    raise ValueError('not representable in %s: %08x' % (fmt, bits))


def to_f32(S, q, P=23, mode='rz'):
    """Exact value S * 2^q (S signed integer) -> binary32 bits, keeping P fraction bits
    (P < 23 leaves the low 23-P fraction bits zero: 'f32_e8m13' for P = 13).
    Exponent floor -126 (subnormal results have quantum 2^(-126-P)).  mode 'rz' or 'rne'.
    Exponent > 127 after rounding -> +-inf (both sources do this, also under RZ).  S == 0 -> +0."""
    if S == 0:
        return 0
    sign = 1 if S < 0 else 0
    M = -S if S < 0 else S
    e = q + M.bit_length() - 1
    ee = e if e > -126 else -126
    sh = (ee - P) - q
    if sh > 0:
        r = M >> sh
        if mode == 'rne':
            rem = M - (r << sh)
            half = 1 << (sh - 1)
            if rem > half or (rem == half and (r & 1)):
                r += 1
        M = r
    else:
        M <<= -sh
    if M >= (1 << (P + 1)):
        M >>= 1
        ee += 1
    if ee > 127:
        return (sign << 31) | INF32
    M <<= (23 - P)
    if M < (1 << 23):
        return (sign << 31) | M                       # subnormal (ee == -126)
    return (sign << 31) | ((ee + 127) << 23) | (M - (1 << 23))


def f32_add_rne(x, y):
    """IEEE binary32 x + y, round to nearest even (used for the epilogue addition of C)."""
    a, b = decode_f32(x), decode_f32(y)
    if a.special or b.special:
        if 'nan' in (a.special, b.special):
            return NAN32
        if a.special and b.special and a.s != b.s:
            return NAN32
        return x if a.special else y
    q = min(a.e, b.e) - 23
    S = (-1) ** a.s * (a.M << (a.e - 23 - q)) + (-1) ** b.s * (b.M << (b.e - 23 - q))
    if S == 0:
        return x & y & 0x80000000                    # -0 only for (-0) + (-0)
    return to_f32(S, q, 23, 'rne')


# ----------------------------------------------------------------------------
# Terms.  A term is (sign, M, scale_exp, align_exp): value = (-1)^sign * M * 2^scale_exp and
# align_exp is the exponent used to find the common alignment exponent.
# ----------------------------------------------------------------------------
def product_term(x, y, align='operand', extra_exp=0):
    """x, y: Val.  align='operand' -> E = e(x) + e(y) (operand exponents, clamped at emin;
    product significand Mx*My in [0,4) NOT renormalised).  align='product' -> exponent of the
    renormalised exact product (only used to show that it does not match)."""
    M = x.M * y.M
    sc = x.e - x.mb + y.e - y.mb + extra_exp
    E = x.e + y.e + extra_exp
    if align == 'product' and M:
        E = sc + M.bit_length() - 1
    return (x.s ^ y.s, M, sc, E)


def c_term(c):
    """C (binary32 Val) as a term: exponent = its own binary32 exponent (-126 for subnormals)."""
    return (c.s, c.M, c.e - 23, c.e)


def fused_sum(terms, F, term_round='rz', zero_in_max=False):
    """Align every non-zero term to Emax = max align_exp, keep F fraction bits below Emax,
    cutting each term individually (term_round 'rz' = toward zero on the magnitude, 'rd' =
    toward -inf), then add exactly.  Returns (S, q): sum = S * 2^q, q = Emax - F.
    zero_in_max: zero terms still take part in Emax (MMA-Sim mxf4nvf4: chunk exponent = scales)."""
    if not zero_in_max:
        terms = [t for t in terms if t[1]]
    if not terms:
        return 0, 0
    Emax = max(t[3] for t in terms)
    S = 0
    for s, M, sc, _ in terms:
        sh = sc + F - Emax
        if sh >= 0:
            v = (-M if s else M) << sh
        elif term_round == 'rz':
            v = M >> -sh
            v = -v if s else v
        else:                                        # 'rd': floor of the signed value
            v = (-M if s else M) >> -sh              # Python >> floors
        S += v
    return S, Emax - F


def specials(prods, c):
    """NaN / Inf screening common to all NVIDIA models (MMA-Sim: fp64 sum of products + c is
    NaN/Inf).  Returns None (finite) or the binary32 result."""
    nan = c.special == 'nan'
    pinf = ninf = False
    if c.special == 'inf':
        pinf, ninf = (not c.s), bool(c.s)
    for x, y in prods:
        if x.special == 'nan' or y.special == 'nan':
            nan = True
        elif x.special == 'inf' or y.special == 'inf':
            if (x.special is None and x.M == 0) or (y.special is None and y.M == 0):
                nan = True                            # inf * 0
            elif x.s ^ y.s:
                ninf = True
            else:
                pinf = True
    if nan or (pinf and ninf):
        return NAN32
    if pinf:
        return INF32
    if ninf:
        return 0x80000000 | INF32
    return None


# ----------------------------------------------------------------------------
# Parameterised NVIDIA model (covers H100 wgmma, Ada mma, Blackwell tcgen05, B200 data)
# ----------------------------------------------------------------------------
PRESETS = {
    # measured: reproduces MATLAB-tensor-core model_validation/H100/{E4M3,E5M2} (d = A.B, C = 0)
    'h100_wgmma_fp8': dict(G=32, F=13, align='operand', c_mode='inside', P_mid=13, P_out=13,
                           out_round='rz', term_round='rz'),
    # measured: reproduces model_validation/Ada/{E4M3,E5M2} (mma.sync m16n8k32, C from file)
    'ada_mma_fp8': dict(G=16, F=13, align='operand', c_mode='inside', P_mid=13, P_out=13,
                        out_round='rz', term_round='rz'),
    # measured: reproduces model_validation/B200/{E4M3,E5M2}: tensor core with C = 0, RZ to
    # fp32, then D = RNE(T + C).  G/F are MMA-Sim's values; the data accepts any F >= 23, G 16|32.
    'b200_measured_fp8': dict(G=32, F=25, align='operand', c_mode='epilogue_rne', P_mid=23,
                              P_out=23, out_round='rz', term_round='rz'),
    # from MMA-Sim rules, no measured data here (tcgen05mma kind::f8f6f4, C inside the sum)
    'blackwell_tcgen05_f8f6f4': dict(G=32, F=25, align='operand', c_mode='inside', P_mid=23,
                                     P_out=23, out_round='rz', term_round='rz'),
    # ASSUMPTION: neither source models FP8 mma.sync on sm_90 (MMA-Sim lists no Hopper FP8 mma
    # qualifier).  Uses the Hopper wgmma FP8 datapath parameters; unverified.
    'hopper_mma_sync_fp8': dict(G=32, F=13, align='operand', c_mode='inside', P_mid=13, P_out=13,
                                out_round='rz', term_round='rz'),
}


def nv_dot_add(a, b, c_bits, fmt_a, fmt_b=None, G=32, F=13, align='operand', c_mode='inside',
               P_mid=13, P_out=13, out_round='rz', term_round='rz'):
    """a, b: lists of FP8 codes (length K); c_bits: binary32 bits. Returns binary32 bits.
    Groups of G products are summed by fused_sum; the running accumulator (C for the first
    group) is one more term of every group when c_mode == 'inside'; each group result is
    converted to binary32 with P_mid (last group: P_out) fraction bits by out_round."""
    fmt_b = fmt_b or fmt_a
    xs = [decode_small(v, fmt_a) for v in a]
    ys = [decode_small(v, fmt_b) for v in b]
    acc = c_bits if c_mode == 'inside' else 0
    K = len(xs)
    for g0 in range(0, K, G):
        pr = list(zip(xs[g0:g0 + G], ys[g0:g0 + G]))
        cv = decode_f32(acc)
        sp = specials(pr, cv)
        if sp is not None:
            acc = sp
            continue
        terms = [product_term(x, y, align) for x, y in pr]
        terms.append(c_term(cv))
        S, q = fused_sum(terms, F, term_round)
        acc = to_f32(S, q, P_out if g0 + G >= K else P_mid, out_round)
    if c_mode == 'epilogue_rne':
        acc = f32_add_rne(acc, c_bits)
    return acc


def preset(name, a, b, c_bits, fmt_a, fmt_b=None, **over):
    kw = dict(PRESETS[name])
    kw.update(over)
    return nv_dot_add(a, b, c_bits, fmt_a, fmt_b, **kw)


# ----------------------------------------------------------------------------
# Block-scaled tcgen05 (from MMA-Sim rules, no measured data here)
# ----------------------------------------------------------------------------
def tcgen05_mxf8f6f4(a, b, c_bits, fmt_a, fmt_b, sa, sb):
    """kind::mxf8f6f4, K = 32, one ue8m0 scale per operand vector (block32).
    MMA-Sim nv_fused_dot_add(..., 25, 'f32', scale_a, scale_b): each product's alignment
    exponent is e(a)+e(b)+e(sa)+e(sb); C inside; F = 25; RZ to binary32."""
    xs = [decode_small(v, fmt_a) for v in a]
    ys = [decode_small(v, fmt_b) for v in b]
    s1, s2 = decode_scale(sa, 'ue8m0'), decode_scale(sb, 'ue8m0')
    cv = decode_f32(c_bits)
    if s1.special or s2.special:
        return NAN32
    sp = specials(list(zip(xs, ys)), cv)
    if sp is not None:
        return sp
    terms = [product_term(x, y, 'operand', s1.e + s2.e) for x, y in zip(xs, ys)]
    terms.append(c_term(cv))
    S, q = fused_sum(terms, 25)
    return to_f32(S, q, 23, 'rz')


def tcgen05_mxf4nvf4(a, b, c_bits, sa, sb, stype='ue8m0'):
    """kind::mxf4nvf4, K = 64 E2M1 values (a, b: lists of 64 4-bit codes), scales sa, sb: lists
    of K/block codes (block 32 or 16 for ue8m0, 16 for ue4m3).  MMA-Sim
    nv_fused_dot_add_with_block_scale: for each 16-element chunk j the exact chunk sum
    P_j = sum a_k b_k is one term with significand P_j * sig(sa) * sig(sb) (NOT renormalised)
    and alignment exponent e(sa) + e(sb); C is a term; F = 35; RZ to binary32.
    NaN if any scale or C is NaN."""
    cv = decode_f32(c_bits)
    S1 = [decode_scale(v, stype) for v in sa]
    S2 = [decode_scale(v, stype) for v in sb]
    if cv.special == 'nan' or any(s.special for s in S1 + S2):
        return NAN32
    if cv.special == 'inf':
        return c_bits
    block = len(a) // len(sa)
    terms = [c_term(cv)]
    for k in range(0, len(a), 16):
        P = 0                                      # exact chunk sum in units of 2^-2
        for i in range(k, k + 16):
            x, y = decode_small(a[i], 'e2m1'), decode_small(b[i], 'e2m1')
            v = x.M * y.M << (x.e + y.e)           # x.e - x.mb >= -1 ; units 2^-2
            P += -v if x.s ^ y.s else v
        s1, s2 = S1[k // block], S2[k // block]
        M = P * s1.M * s2.M
        sc = -2 - s1.mb - s2.mb + s1.e + s2.e
        terms.append((1 if M < 0 else 0, abs(M), sc, s1.e + s2.e))
    S, q = fused_sum(terms, 35, zero_in_max=True)
    return to_f32(S, q, 23, 'rz')


# ----------------------------------------------------------------------------
# AMD CDNA3 FP8 (from MMA-Sim rules, no measured data here)
# ----------------------------------------------------------------------------
def cdna3_fp8(a, b, c_bits, fmt_a='e4m3fnuz', fmt_b=None):
    """v_mfma_f32_*_{fp8,bf8}_{fp8,bf8}: MMA-Sim simulator/amd.py mfma (group_size 16,
    two-stage) + arithmetic.amd_fused_dot_rd_add(is_fp8=True, n_fractional_bits=24).
    Zero products keep MMA-Sim's exponent rule (zero operand -> exponent -126)."""
    fmt_b = fmt_b or fmt_a
    xs = [decode_small(v, fmt_a) for v in a]
    ys = [decode_small(v, fmt_b) for v in b]
    acc = c_bits
    for g0 in range(0, len(xs), 16):
        cv = decode_f32(acc)
        pr = list(zip(xs[g0:g0 + 16], ys[g0:g0 + 16]))
        sp = specials(pr, cv)
        if sp is not None:
            acc = sp
            continue
        terms = []
        for x, y in pr:
            ex = x.e if x.M else -126
            ey = y.e if y.M else -126
            terms.append((x.s ^ y.s, x.M * y.M, x.e - x.mb + y.e - y.mb, ex + ey))

        def half(ts):                               # fused_sum with zeros participating in max
            Emax = max(t[3] for t in ts)
            S = 0
            for s, M, sc, _ in ts:
                sh = sc + 24 - Emax
                v = M << sh if sh >= 0 else M >> -sh          # math.trunc on magnitude
                S += -v if s else v
            return S, Emax                           # value = S * 2^(Emax-24)
        S0, e0 = half(terms[0::2])
        S1, e1 = half(terms[1::2])
        me = max(e0, e1)
        S = (S0 >> (me - e0)) + (S1 >> (me - e1))    # floor (RD) realignment, 24 frac bits
        ec = cv.e if cv.M else -126
        me2 = max(me, ec)
        S = (S << 7) >> (me2 - me)                   # floor to 31 frac bits below me2
        if ec >= me2 - 25 and cv.M:
            Cs = (-cv.M if cv.s else cv.M) << 1     # C significand in units of 2^-24
            Cs >>= (me2 - ec)                        # floor to 24 frac bits below me2
        else:
            Cs = 0
        T = S + (Cs << 7)                            # units 2^(me2-31)
        acc = to_f32(T, me2 - 31, 23, 'rne')         # torch.tensor(float64, float32): RNE
    return acc


# ----------------------------------------------------------------------------
# Data files (tests/data/tensor_core/<gpu>_<fmt>.txt)
# ----------------------------------------------------------------------------
DATASETS = [  # (file stem, FP8 format, preset, C used by the GPU run)
    ('h100_e4m3', 'e4m3', 'h100_wgmma_fp8', False),
    ('h100_e5m2', 'e5m2', 'h100_wgmma_fp8', False),
    ('ada_e4m3', 'e4m3', 'ada_mma_fp8', True),
    ('ada_e5m2', 'e5m2', 'ada_mma_fp8', True),
    ('b200_e4m3', 'e4m3', 'b200_measured_fp8', True),
    ('b200_e5m2', 'e5m2', 'b200_measured_fp8', True),
]


def read_dataset(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line[0] == '#':
            continue
        A, B, C, D = line.split()
        out.append(([int(A[i:i + 2], 16) for i in range(0, 64, 2)],
                    [int(B[i:i + 2], 16) for i in range(0, 64, 2)], int(C, 16), int(D, 16)))
    return out


def default_data_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, '..', '..', 'tests', 'data', 'tensor_core'))


def check(data_dir, **over):
    total = 0
    for stem, fmt, name, c_used in DATASETS:
        rows = read_dataset(os.path.join(data_dir, stem + '.txt'))
        ok = 0
        for a, b, c, d in rows:
            if preset(name, a, b, c if c_used else 0, fmt, **over) == d:
                ok += 1
        total += ok
        print('%-10s %-20s %d/%d' % (stem, name, ok, len(rows)))
    return total


def sweep(data_dir):
    alts = {
        'h100_wgmma_fp8': [dict(F=12), dict(F=14), dict(F=16), dict(G=16), dict(G=8),
                           dict(P_out=23), dict(out_round='rne'), dict(align='product'),
                           dict(term_round='rd'), ('C inside', True)],
        'ada_mma_fp8': [dict(F=12), dict(F=14), dict(G=32), dict(P_mid=23), dict(P_mid=23, P_out=23),
                        dict(align='product'), dict(term_round='rd'), dict(c_mode='epilogue_rne')],
        'b200_measured_fp8': [dict(c_mode='inside'), dict(F=22), dict(F=23), dict(F=40), dict(G=16),
                              dict(out_round='rne'), dict(align='product')],
    }
    for stem, fmt, name, c_used in DATASETS:
        rows = read_dataset(os.path.join(data_dir, stem + '.txt'))
        for alt in alts[name]:
            cu = c_used
            if isinstance(alt, tuple):
                label, cu, alt = alt[0], True, {}
            else:
                label = ' '.join('%s=%s' % kv for kv in alt.items())
            ok = sum(preset(name, a, b, c if cu else 0, fmt, **alt) == d for a, b, c, d in rows)
            print('%-10s %-18s %-28s %d/%d' % (stem, name, label, ok, len(rows)))


def convert(repo, out_dir):
    """MATLAB-tensor-core model_validation/<GPU>/<FMT>/{a,b}_<GPU>_<FMT>.txt (32 hex binary32
    words per line), {c,d}_<GPU>_fp32.txt (32-char binary strings) -> compact files."""
    os.makedirs(out_dir, exist_ok=True)
    for stem, fmt, _, _ in DATASETS:
        gpu, f = stem.split('_')
        G = {'h100': 'H100', 'ada': 'Ada', 'b200': 'B200'}[gpu]
        F = f.upper()
        d = os.path.join(repo, 'model_validation', G, F)
        A = [l.split() for l in open(os.path.join(d, 'a_%s_%s.txt' % (G, F)))]
        B = [l.split() for l in open(os.path.join(d, 'b_%s_%s.txt' % (G, F)))]
        C = [int(l.strip(), 2) for l in open(os.path.join(d, 'c_%s_fp32.txt' % G))]
        D = [int(l.strip(), 2) for l in open(os.path.join(d, 'd_%s_fp32.txt' % G))]
        assert len(A) == len(B) == len(C) == len(D) == 5000
        cache = {}
        with open(os.path.join(out_dir, stem + '.txt'), 'w') as out:
            for i in range(len(A)):
                row = []
                for vec in (A[i], B[i]):
                    assert len(vec) == 32
                    codes = []
                    for w in vec:
                        bits = int(w, 16)
                        if bits not in cache:
                            code = f32_value_to_code(bits, fmt)
                            v = decode_small(code, fmt)         # round-trip check
                            back = to_f32(-v.M if v.s else v.M, v.e - v.mb, 23, 'rne')
                            if v.M == 0:
                                back = v.s << 31
                            assert back == bits, (w, code)
                            cache[bits] = code
                        codes.append('%02x' % cache[bits])
                    row.append(''.join(codes))
                out.write('%s %s %08x %08x\n' % (row[0], row[1], C[i], D[i]))
        print('wrote', stem, len(A))


def selftest():
    one = 0x38  # e4m3 1.0
    assert decode_small(one, 'e4m3').M == 8 and decode_small(one, 'e4m3').e == 0
    # 1*1 * 32 + 0 = 32 on every preset
    for name in PRESETS:
        assert preset(name, [one] * 32, [one] * 32, 0, 'e4m3') == 0x42000000, name
    # Hopper keeps 13 fraction bits: 1 + 2^-14 (C) -> 1.0
    c = 0x3F800000 | (1 << 9)                         # 1 + 2^-14
    assert preset('hopper_mma_sync_fp8', [0] * 32, [0] * 32, c, 'e4m3') == 0x3F800000
    assert preset('blackwell_tcgen05_f8f6f4', [0] * 32, [0] * 32, c, 'e4m3') == c
    # block scaled: scale 2^1 * 2^1 multiplies the sum by 4
    assert tcgen05_mxf8f6f4([one] * 32, [one] * 32, 0, 'e4m3', 'e4m3', 128, 128) == 0x43000000
    fp4_one = 0x2
    assert tcgen05_mxf4nvf4([fp4_one] * 64, [fp4_one] * 64, 0, [127] * 2, [127] * 2) == 0x42800000
    assert tcgen05_mxf4nvf4([fp4_one] * 64, [fp4_one] * 64, 0, [0x38] * 4, [0x38] * 4, 'ue4m3') == 0x42800000
    assert cdna3_fp8([0x40] * 32, [0x40] * 32, 0) == 0x42000000   # e4m3fnuz 1.0 = 0x40
    assert preset('ada_mma_fp8', [0x7F] + [0] * 31, [one] * 32, 0, 'e4m3') == NAN32
    assert preset('h100_wgmma_fp8', [0x7C] + [0] * 31, [0x3C] * 32, 0, 'e5m2') == INF32
    assert preset('h100_wgmma_fp8', [0x7C, 0xFC] + [0] * 30, [0x3C] * 32, 0, 'e5m2') == NAN32
    print('selftest ok')


def vectors(out_path, count=300, seed=2026):
    """Test vectors of the instructions without measured data, computed by the rules above
    (MMA-Sim's): tcgen05 kind::mxf8f6f4 (E4M3, UE8M0 block 32), kind::mxf4nvf4 (E2M1 with UE8M0
    block 32, UE8M0 block 16, UE4M3 block 16) and AMD CDNA3 FP8 (E4M3FNUZ, K = 32). One line each:
      <kind> <K> <A codes hex> <B codes hex> <A scale codes hex or -> <B scale codes hex or -> <C> <D>
    kinds: mxf8f6f4, mxf4_ue8m0_32, mxf4_ue8m0_16, nvf4_ue4m3_16, cdna3_e4m3fnuz."""
    import random
    rnd = random.Random(seed)
    e4 = [c for c in range(256) if not decode_small(c, 'e4m3').special]
    fnuz = [c for c in range(256) if c != 0x80]
    e2 = list(range(16))

    def rand_c():
        # a float32 from a random E4M3 value times 2^j, j in [-4, 8), or 0
        if rnd.random() < 0.1:
            return 0
        v = decode_small(rnd.choice(e4), 'e4m3')
        if v.M == 0:
            return v.s << 31
        return to_f32(-v.M if v.s else v.M, v.e - v.mb + rnd.randrange(-4, 8), 23, 'rne')

    lines = []
    for _ in range(count):
        a = [rnd.choice(e4) for _ in range(32)]
        b = [rnd.choice(e4) for _ in range(32)]
        sa, sb, c = rnd.randrange(120, 135), rnd.randrange(120, 135), rand_c()
        d = tcgen05_mxf8f6f4(a, b, c, 'e4m3', 'e4m3', sa, sb)
        lines.append('mxf8f6f4 32 %s %s %02x %02x %08x %08x' % (
            ''.join('%02x' % x for x in a), ''.join('%02x' % x for x in b), sa, sb, c, d))
    for kind, block, stype in (('mxf4_ue8m0_32', 32, 'ue8m0'), ('mxf4_ue8m0_16', 16, 'ue8m0'),
                               ('nvf4_ue4m3_16', 16, 'ue4m3')):
        for _ in range(count):
            a = [rnd.choice(e2) for _ in range(64)]
            b = [rnd.choice(e2) for _ in range(64)]
            n = 64 // block
            if stype == 'ue8m0':
                sa = [rnd.randrange(120, 135) for _ in range(n)]
                sb = [rnd.randrange(120, 135) for _ in range(n)]
            else:
                sa = [rnd.randrange(0x01, 0x7f) for _ in range(n)]
                sb = [rnd.randrange(0x01, 0x7f) for _ in range(n)]
            c = rand_c()
            d = tcgen05_mxf4nvf4(a, b, c, sa, sb, stype)
            lines.append('%s 64 %s %s %s %s %08x %08x' % (
                kind, ''.join('%x' % x for x in a), ''.join('%x' % x for x in b),
                ''.join('%02x' % x for x in sa), ''.join('%02x' % x for x in sb), c, d))
    for _ in range(count):
        a = [rnd.choice(fnuz) for _ in range(32)]
        b = [rnd.choice(fnuz) for _ in range(32)]
        c = rand_c()
        d = cdna3_fp8(a, b, c, 'e4m3fnuz')
        lines.append('cdna3_e4m3fnuz 32 %s %s - - %08x %08x' % (
            ''.join('%02x' % x for x in a), ''.join('%02x' % x for x in b), c, d))
    with open(out_path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('wrote', out_path, len(lines))


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else 'check'
    if cmd == 'check':
        n = check(sys.argv[2] if len(sys.argv) > 2 else default_data_dir())
        print('total %d/30000' % n)
        sys.exit(0 if n == 30000 else 1)
    elif cmd == 'sweep':
        sweep(sys.argv[2] if len(sys.argv) > 2 else default_data_dir())
    elif cmd == 'convert':
        convert(sys.argv[2], sys.argv[3])
    elif cmd == 'vectors':
        vectors(sys.argv[2] if len(sys.argv) > 2 else os.path.join(default_data_dir(), 'mmasim_rules_vectors.txt'))
    elif cmd == 'selftest':
        selftest()
    else:
        print(__doc__)
        sys.exit(2)
