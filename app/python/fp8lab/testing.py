"""Assertions for a kernel's pytest: ``assert_kernel_matches`` checks an FP8 GEMM kernel's output
bit for bit (or within the criteria given) against FP8 Lab's CPU reference, and says, when it does
not match, which element is worst, by how many ULPs, and which accumulation model explains the
output best.

DeepGEMM's ``calc_diff`` (copied into vLLM's FP8 GEMM tests) passes any output within 1e-3 of the
reference: a 13-bit and a 25-bit accumulator pass alike. This names the difference instead."""

from . import _keywords, check_kernel

__all__ = ["assert_kernel_matches"]


def assert_kernel_matches(observed, a, b, *, reference="exact", max_ulp=None, atol=None, rtol=None,
                          min_sqnr_db=None, allow_nonfinite=False, fit=True, **options):
    """Raise AssertionError unless ``observed`` (the kernel's D [M, N]) meets the criteria against
    the ``reference`` model on operands ``a``, ``b`` (see :func:`fp8lab.check_kernel`; no criterion =
    bit-identical). The message names the verdict, the worst element ``D[row, col]`` with the
    observed and reference values and its ULP distance, the first differing element, the identical
    share, and — with ``fit`` — the best-fitting accumulation model and the runner-up.
    Returns the :class:`fp8lab.KernelCheck` when it passes."""
    v = check_kernel(observed, a, b, reference=reference, max_ulp=max_ulp, atol=atol, rtol=rtol,
                     min_sqnr_db=min_sqnr_db, allow_nonfinite=allow_nonfinite, fit=fit, **options)
    if v.passed:
        return v
    c = v.comparison
    w = c["worst"]
    lines = [v.line]
    lines.append("worst element D[%d, %d]: observed %r, reference (%s) %r: %s ULPs"
                 % (w["row"], w["col"], w["observed"], v.reference, w["reference"], _ulps(w["ulps"])))
    f = c["first"]
    if f["row"] >= 0:
        lines.append("first differing element D[%d, %d]: observed %r, reference %r"
                     % (f["row"], f["col"], f["observed"], f["reference"]))
    lines.append("%d of %d elements identical (%.2f %%), max %s ULPs, median %s, SQNR %.1f dB, calc_diff %.3g"
                 % (c["identical"], c["elements"], 100.0 * c["identical_share"], _ulps(c["max_ulps"]),
                    _ulps(c["median_ulps"]), c["sqnr_db"], c["calc_diff"]))
    if v.fit is not None:
        bc = v.fit["best_comparison"]
        lines.append("best-fitting model: %s (%.2f %% identical, max %s ULPs)"
                     % (v.fit["best"], 100.0 * bc["identical_share"], _ulps(bc["max_ulps"])))
        if v.fit["runner_up"]:
            lines.append("runner-up: %s (%.2f points behind)" % (v.fit["runner_up"], v.fit["margin_points"]))
        if v.fit["warning"]:
            lines.append(v.fit["warning"])
    raise AssertionError(_keywords("\n".join(lines)))


def _ulps(u):
    if u != u:
        return "NaN"
    if u == float("inf"):
        return "inf"
    return "%g" % u
