"""FP8 Lab's bit-exact core in Python: formats, scaling presets, the FP8 GEMM reference with its
accumulation models, the kernel check, re-runs and session files.

Every function calls the core function the ``fp8lab-cli`` command of the same name uses, so it
gives the CLI's bits on the same inputs (docs/python.md). Arrays are numpy arrays; results are
returned without copies (each array owns, or is a read-only view of, what core computed).

Scale convention everywhere: ``dequant_scale`` — ``x ≈ decode(code) · dequant_scale`` (cuBLASLt's
A/B_SCALE_POINTER, ``torch._scaled_mm``'s ``scale_a``/``scale_b``); ``quant_scale`` is the multiplier
the quantize op used (Transformer Engine's ``scale``): ``x_q = cast(x · quant_scale)``.

Submodules: :mod:`fp8lab.testing` (``assert_kernel_matches`` for a kernel's pytest) and
:mod:`fp8lab.torch` (``attach``: record a PyTorch model's Linear operands into a session).
"""

import functools
import re

from . import _core
from ._core import GemmResult, QuantizedTensor, RerunResult

__all__ = [
    "formats", "encode", "decode", "table", "quantize", "QuantizedTensor", "gemm", "GemmResult",
    "check_kernel", "KernelCheck", "rerun", "RerunResult", "Session", "open_session", "version",
]

version = _core.version

_FLAG_KEYWORDS = {"a-format": "format_a", "b-format": "format_b", "a-scaling": "scaling_a", "b-scaling": "scaling_b",
                  "float64": "x (a float64 array)", "no-saturate": "saturate=False", "no-pow2": "pow2=False",
                  "c-file": "c_file", "values": "x"}


def _keywords(message):
    """A core message names the CLI's flags (--block); in Python they are keywords (block)."""
    def kw(m):
        flag = m.group(1)
        return _FLAG_KEYWORDS.get(flag, flag.replace("-", "_"))
    return re.sub(r"--([a-z][a-z0-9-]*)", kw, message)


def _require(name, value, kind):
    """TypeError naming the keyword unless value is of kind: "int" (not bool), "bool", "real", "str"."""
    import numbers
    ok = {"int": isinstance(value, numbers.Integral) and not isinstance(value, bool),
          "bool": isinstance(value, bool),
          "real": isinstance(value, numbers.Real) and not isinstance(value, bool),
          "str": isinstance(value, str)}[kind]
    if not ok:
        words = {"int": "an integer", "bool": "True or False", "real": "a number", "str": "a string"}[kind]
        raise TypeError("%s: expected %s, got %r" % (name, words, value))


def _python_words(f):
    @functools.wraps(f)
    def call(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (ValueError, TypeError) as e:
            text = _keywords(str(e))
            if text == str(e):
                raise
            raise type(e)(text) from None
    return call


def formats():
    """Every named format (E4M3FN, E5M2, FNUZ variants, E8M0FNU, FP6, FP4, BF16, FP16) as a list of
    dicts: name, bits, max_finite, description. Semantics: OCP OFP8 v1.0, OCP MX v1.0, CUDA 13's
    conversions (docs/formats.md)."""
    return _core.formats()


@_python_words
def encode(x, format, *, rounding="rne", saturate=True, specials="cuda", scale=1.0, scale_op="multiply",
           seed=0, stochastic_bits=16):
    """Encode values into a format: ``codes = encode(x · scale)`` (or ``x / scale`` with
    ``scale_op="divide"``), one rounding, as ``fp8lab-cli encode``.

    x: numpy float32 or float64 array of any shape (float64 values are rounded once from double;
       float32 ones are scaled in float32 arithmetic, as a float32 tensor's cast).
    format: a format name (``"E4M3FN"``, ``"float8_e5m2"``, ``"mxfp4"``, ...; see :func:`formats`).
    rounding: ``"rne"`` | ``"rtz"`` | ``"ru"`` | ``"rd"`` | ``"stochastic"`` (element i draws the
       random word ``counterRandom(seed, i)`` with ``stochastic_bits`` bits).
    saturate: values past max finite become ±max (OCP SAT, ``__NV_SATFINITE``); False: Inf or NaN.
    specials: ``"cuda"`` (default) or ``"ml_dtypes"`` for NaN/Inf/zero inputs (docs/formats.md).
    Returns uint8 codes of x's shape (uint16 for BF16/FP16). Raises TypeError for another dtype,
    ValueError for an unknown format, rounding or a scale that is not finite and > 0.
    """
    _require("saturate", saturate, "bool")
    _require("scale", scale, "real")
    _require("seed", seed, "int")
    _require("stochastic_bits", stochastic_bits, "int")
    if not 0 <= seed < 2 ** 64:
        raise ValueError("seed: expected 0 <= seed < 2**64, got %d" % seed)
    return _core.encode(x, format, rounding, saturate, specials, float(scale), scale_op, int(seed),
                        int(stochastic_bits))


@_python_words
def decode(codes, format):
    """Decode codes of a format: float32 values of the codes' shape (every value of a format of at
    most 16 bits is exact in float32; NaN codes give NaN with their sign). codes: uint8 (uint16 for
    BF16/FP16). Raises TypeError for another dtype, ValueError for a code beyond the format's width."""
    return _core.decode(codes, format)


def table(format):
    """Every code of a format, as ``fp8lab-cli table --format F``: a dict with ``code`` (uint32),
    ``value`` (float64, exact), ``class`` ("zero", "subnormal", "normal", "max_finite", "infinity",
    "nan"), ``binary`` (fields separated) and the format's properties (bits, exponent_bits,
    mantissa_bits, bias, max_finite, min_normal, min_subnormal, epsilon)."""
    return _core.table(format)


@_python_words
def quantize(x, scaling="te_current", format=None, *, axis="cols", rounding="rne", seed=0, saturate=True,
             block=None, pow2=None, amax_epsilon=None, margin=None, history_len=None, algo=None,
             amax_history=None):
    """Quantize a tensor with a scaling preset, as ``fp8lab-cli quantize``.

    x: float32 or float64 numpy array [rows, cols] (1-D: one row). float64 input is quantized from
       float64 (``--float64``): amax in float64, one rounding of x·s.
    scaling: a preset of docs/scaling.md — current scaling (``te_current``, ``torchao_rowwise``,
       ``deepgemm_1x128``, ``te_block_128x128``, ``mx_rceil``, ...), delayed (``te_delayed``,
       ``flax_delayed``: ``amax_history`` replays earlier steps' amaxes, oldest first) or NVFP4
       (``nvfp4_te``, ``nvfp4_torchao``, ...; E2M1 elements).
    format: element format (default E4M3FN; E2M1 for NVFP4 presets).
    axis: the contraction axis, ``"cols"`` for A [M, K] (K along a row) or ``"rows"`` for B [K, N].
    block, pow2, amax_epsilon, margin, history_len, algo: the preset's options (the CLI's flags); an
       option the preset does not read is refused (ValueError naming it).
    Returns a :class:`QuantizedTensor`: ``codes`` [rows, cols] uint8, ``dequant_scales`` (each
    block's factor, x ≈ decode(code) · factor: for NVFP4 its E4M3 scale times the tensor level, with
    ``block_scales`` the E4M3 values) and ``quant_scales`` (None for NVFP4, whose element multiplier
    follows the preset's rule) over the block grid (float32), ``scale_codes`` (E8M0 for MX, E4M3FN for NVFP4)
    with ``scale_format``, ``block``, ``tensor_scale`` (NVFP4's second level), ``stats`` (saturated,
    underflow, ... counts), ``strategy``, ``dequantize()``. Its arrays are read-only views.
    """
    _require("seed", seed, "int")
    _require("saturate", saturate, "bool")
    for name, value, kind in (("block", block, "int"), ("pow2", pow2, "bool"), ("amax_epsilon", amax_epsilon, "real"),
                              ("margin", margin, "int"), ("history_len", history_len, "int"), ("algo", algo, "str")):
        if value is not None:
            _require(name, value, kind)
    if amax_history is not None:
        try:
            if isinstance(amax_history, (str, bytes)):
                raise TypeError
            amax_history = [float(v) for v in amax_history]
        except (TypeError, ValueError):
            raise TypeError("amax_history: expected a sequence of numbers (earlier steps' amaxes, oldest first), "
                            "got %r" % (amax_history,)) from None
    return _core.quantize(x, scaling, format or "", axis, rounding, int(seed), saturate, block, pow2,
                          amax_epsilon, margin, history_len, algo, amax_history)


def _gemm_doc():
    lines = []
    for key, help_text in _core.gemm_keywords():
        lines.append("    %s: %s" % (key, help_text))
    return "\n".join(lines)


@_python_words
def gemm(a, b, **options):
    """One FP8 GEMM ``D [M, N] = A [M, K] · B [K, N]`` on the CPU reference, as ``fp8lab-cli gemm``:
    A and B are quantized with the scaling preset(s), multiplied under the accumulation model, and
    the error split into quantization (quantized-exact vs ideal), accumulation (D vs quantized-exact)
    and total.

    a, b: float32 numpy arrays [M, K] and [K, N] (a view is copied once into the run), or file specs
       (``"a.npy"``, ``"m.safetensors:NAME"``, ``"f.h5:/path"``) read as the CLI reads them.
    c: optional float32 array [M, N] added as ``beta · C`` (pass ``beta``); where C enters the sum
       follows the accumulation preset (docs/gemm.md). bias: optional float32 array [N].
    id: the run id stored in ``attrs`` (default "python").
    Every other keyword is a flag of ``fp8lab-cli gemm`` with '_' for '-' (``accumulation="hopper_fp8"``,
    ``output="bf16"``, ``scaling="deepgemm_1x128"``, ``scaling_b=...``, ``format_a``, ``format_b``,
    ``promotion_interval``, ``alpha``, ``output_scale``, ``threads``, ...), checked against the same
    ranges and rules. Returns a :class:`GemmResult`: ``d`` (float32 [M, N], the output type's
    values), ``d_codes`` (FP8 outputs), ``reference`` (the float64 ideal of the float operands),
    ``quantized_exact``, ``errors`` {"quantization", "accumulation", "total"} (max_abs, rel_fro,
    sqnr_db, ...), ``a`` / ``b`` (the quantized operands), ``metrics``, ``attrs``, ``warnings``.
    Raises TypeError for a wrong dtype or an unknown keyword, ValueError for bad shapes or values.

    Keywords (from the parameter schema):
"""
    for hidden in ("observed", "check"):
        if hidden in options:
            raise TypeError("gemm: unexpected keyword '%s' (a kernel's D is checked with fp8lab.check_kernel)" % hidden)
    return _core.gemm(a, b, None, {}, **options)


try:
    gemm.__doc__ += _gemm_doc()
except Exception:  # the schema's text is documentation only
    pass


class KernelCheck:
    """The verdict of :func:`check_kernel`: ``passed`` (bool), ``line`` ("PASS: ..." / "FAIL: ..."),
    ``failures`` (one line per failed criterion), ``reference`` (the model compared with),
    ``comparison`` (identical, differing, max_ulps, median_ulps, sqnr_db, calc_diff, worst {row, col,
    observed, reference, ulps}, ...), ``fit`` (best, best_comparison, runner_up, verdict, warning, or
    None without the fit) and ``gemm`` (the :class:`GemmResult` of the reference run)."""

    def __init__(self, result):
        c = result.check
        self.gemm = result
        self.passed = c["passed"]
        self.line = c["line"]
        self.failures = list(c["failures"])
        self.reference = c["reference"]
        self.comparison = c["comparison"]
        self.fit = c["fit"]

    def __bool__(self):
        return bool(self.passed)

    def __repr__(self):
        return "KernelCheck(%s)" % self.line


@_python_words
def check_kernel(observed, a, b, *, reference="exact", max_ulp=None, atol=None, rtol=None, min_sqnr_db=None,
                 allow_nonfinite=False, fit=True, fit_bits=None, fit_groups=None, fit_intervals=None, **options):
    """Check a kernel's output D against the CPU reference on the same operands, as ``fp8lab-cli gemm
    --observed d.npy`` (docs/gemm.md, "Check my kernel in CI").

    observed: the kernel's D [M, N]: float32 / float16 / float64 values, or uint8 codes of an FP8
       output (then pass ``output="e4m3fn"`` and ``output_scale`` = the scale_D the kernel used).
    a, b, options: the GEMM as in :func:`gemm` (the kernel's operands, scaling, output type, epilogue).
    reference: the model the verdict compares with (``exact``, ``fp32``, ``split``, or an accumulation
       preset such as ``hopper_fp8``). Criteria: ``max_ulp``, ``atol``/``rtol`` (numpy.isclose band),
       ``min_sqnr_db``; none given means bit-identical (0 ULP). ``fit``: also search the accumulation
       models for the one that explains D (``fit_bits="10..28"``, ``fit_groups``, ``fit_intervals``).
    Returns a :class:`KernelCheck` (truthy when it passed).
    """
    check = {"reference": reference, "max_ulp": max_ulp, "atol": atol, "rtol": rtol, "min_sqnr_db": min_sqnr_db,
             "allow_nonfinite": allow_nonfinite, "fit": fit, "fit_bits": fit_bits, "fit_groups": fit_groups,
             "fit_intervals": fit_intervals}
    if observed is None:
        raise TypeError("observed: expected the kernel's output D as a numpy array, got None")
    return KernelCheck(_core.gemm(a, b, observed, {k: v for k, v in check.items() if v is not None}, **options))


@_python_words
def rerun(path, run_id, *, threads=0):
    """Re-run a stored GEMM run from its config on the CPU reference, as ``fp8lab-cli rerun``, and
    compare it bit for bit with what the file holds. Returns a :class:`RerunResult`: ``d`` (the fresh
    output D as float32 numpy), ``identical``, ``differences`` (one line each), ``datasets`` and
    ``metrics`` compared, ``report`` (the CLI's text). Raises KeyError for a run the file does not
    hold, ValueError for a file that is not a session or a run type that cannot be re-run."""
    return _core.rerun(str(path), run_id, int(threads))


class Session:
    """A session file (HDF5, docs/session-format.md) opened for reading: the layout is validated on
    opening, datasets are read on demand.

    ``runs``: run ids; ``run(id)``: a dict with type, seed, backend, device, config (the JSON text),
    the config parsed as ``config_dict``, attrs, metrics, datasets (paths); ``read(id, path)``:
    one dataset as a numpy array (float32, float64, uint8 or int64, as stored); ``close()`` (or a
    ``with`` block) releases the file. Raises KeyError for an unknown run or dataset, ValueError for
    a file that is not a valid session or a closed one.
    """

    def __init__(self, path):
        self._s = _core.Session(str(path))

    @property
    def path(self):
        return self._s.path

    @property
    def runs(self):
        return list(self._s.run_ids)

    @property
    def warnings(self):
        return list(self._s.warnings)

    def close(self):
        """Releases the file; later calls raise ValueError. Also on leaving a ``with`` block."""
        self._s.close()

    @property
    def closed(self):
        return self._s.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def run(self, run_id):
        import json
        r = self._s.run(run_id)
        try:
            r["config_dict"] = json.loads(r["config"]) if r["config"] else {}
        except ValueError:
            r["config_dict"] = None
        return r

    def read(self, run_id, dataset):
        return self._s.read(run_id, dataset)

    def __repr__(self):
        return "Session(%r, %d runs)" % (self.path, len(self.runs))


def open_session(path):
    """The same as ``Session(path)``."""
    return Session(path)
