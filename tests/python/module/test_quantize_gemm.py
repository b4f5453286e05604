"""quantize, gemm, check_kernel and rerun give the bits fp8lab-cli gives on the same inputs (the CLI's
JSON and its session file read with h5py), and the numbers derived by hand where a case is small."""
import subprocess

import h5py
import numpy as np
import pytest

import fp8lab
import fp8lab.testing


def rng_matrix(seed, rows, cols, scale=1.0):
    return (np.random.default_rng(seed).standard_normal((rows, cols)) * scale).astype(np.float32)


@pytest.mark.parametrize("scaling,fmt,shape,axis", [
    ("te_current", "E4M3FN", (4, 64), "cols"),
    ("mx_rceil", "E4M3FN", (4, 64), "cols"),
    ("deepgemm_1x128", "E4M3FN", (3, 256), "cols"),
    ("te_block_128x128", "E5M2", (130, 140), "rows"),
    ("nvfp4_te", "E2M1", (2, 32), "cols"),
])
def test_quantize_same_bits_as_cli(cli, tmp_path, scaling, fmt, shape, axis):
    x = rng_matrix(7, *shape, scale=3.0)
    x[0, 0] = 1000.0
    src = tmp_path / "x.txt"
    np.savetxt(src, x.reshape(-1), fmt="%.9g")
    axis_flag = ["--axis", axis] if axis != "cols" else []
    out = cli("quantize", "--scaling", scaling, "--format", fmt, "--input", src, "--shape",
              "%dx%d" % shape, *axis_flag, "--json", json_out=True)
    q = fp8lab.quantize(x, scaling, fmt, axis=axis)
    assert [int(c, 16) for c in out["codes"]] == q.codes.reshape(-1).tolist()
    if q.quant_scales is not None:
        assert out["quant_scales"] == q.quant_scales.reshape(-1).tolist()
    assert list(out["block"]) == list(q.block)
    assert out["saturated"] == q.stats["saturated"] and out["underflow"] == q.stats["underflow"]
    if out.get("scale_codes"):
        assert [int(c, 16) for c in out["scale_codes"]] == q.scale_codes.reshape(-1).tolist()
    # dequant_scales are each block's factor (NVFP4: E4M3 scale times the tensor level), as the CLI's
    assert np.array_equal(np.array(out["dequant_scales"], dtype=np.float32), q.dequant_scales.reshape(-1))
    if "block_scales" in out:
        assert np.array_equal(np.array(out["block_scales"], dtype=np.float32), q.block_scales.reshape(-1))
        assert q.tensor_scale["convention"] == out["tensor_scale"]["convention"]
        # x ≈ decode(code) · dequant_scale, block by block (1×16 blocks along the columns)
        deq = fp8lab.decode(q.codes, "E2M1") * np.repeat(q.dequant_scales, 16, axis=1)
        assert np.array_equal(deq.astype(np.float32), q.dequantize())
    assert np.array_equal(np.array(out["dequantized"], dtype=np.float32), q.dequantize().reshape(-1))


def test_quantize_by_hand():
    # te_current, E4M3FN: amax 4 → quant_scale = 448 / 4 = 112, dequant_scale = 1/112 (float32);
    # 4 · 112 = 448 → 0x7E; 1 · 112 = 112 = 1.75·2^6 → S.1101.110 = 0x6E; -2 · 112 → 0xF6.
    q = fp8lab.quantize(np.array([[4.0, 1.0, -2.0, 0.0]], np.float32), "te_current", "E4M3FN")
    assert q.codes.tolist() == [[0x7E, 0x6E, 0xF6, 0x00]]
    assert q.quant_scales[0, 0] == np.float32(112.0)
    assert q.dequant_scales[0, 0] == np.float32(1.0) / np.float32(112.0)
    assert q.stats["zero_inputs"] == 1
    # Read-only views of the result.
    with pytest.raises(ValueError):
        q.codes[0, 0] = 1


def test_quantize_refuses_unread_options():
    x = np.ones((2, 32), np.float32)
    with pytest.raises(ValueError, match="block"):
        fp8lab.quantize(x, "te_current", "E4M3FN", block=16)
    with pytest.raises(ValueError, match="x: expected a 2-D array"):
        fp8lab.quantize(np.ones((2, 2, 2), np.float32), "te_current")
    with pytest.raises(ValueError, match="axis"):
        fp8lab.quantize(x, "te_current", axis="k")


GEMM_CASES = [
    dict(accumulation="hopper_fp8"),
    dict(accumulation="fp32", output="bf16", scaling="deepgemm_1x128", scaling_b="deepgemm_128x128"),
    dict(accumulation="split", promotion_interval=64, output="e4m3fn", output_scale=4.0),
    dict(accumulation="blackwell_fp8", scaling="mx_rceil", alpha=0.5),
]


@pytest.mark.parametrize("case", range(len(GEMM_CASES)))
def test_gemm_same_bits_as_cli(cli, tmp_path, case):
    kw = GEMM_CASES[case]
    a, b = rng_matrix(1, 64, 256), rng_matrix(2, 256, 48, scale=0.25)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    flags = []
    for k, v in kw.items():
        flag = {"scaling_b": "b-scaling"}.get(k, k.replace("_", "-"))
        flags += ["--" + flag, str(v)]
    cli("gemm", "--a-tensor", tmp_path / "a.npy", "--b-tensor", tmp_path / "b.npy", *flags,
        "--out", tmp_path / "s.h5", "--id", "r", "-q")
    r = fp8lab.gemm(a, b, **kw)
    with h5py.File(tmp_path / "s.h5", "r") as f:
        g = f["runs/r"]
        assert np.array_equal(g["output/D"][()].view(np.uint32), r.d.view(np.uint32))
        if r.d_codes is not None:
            assert np.array_equal(g["output/D_codes"][()], r.d_codes)
        assert np.array_equal(g["reference/D"][()], r.reference)
        compared = 0
        for name, v in g["metrics"].attrs.items():
            if name.endswith((".units", ".meaning")) or "seconds" in name:
                continue
            assert v == r.metrics[name] or (np.isnan(v) and np.isnan(r.metrics[name])), name
            compared += 1
        assert compared >= 10
        # The error split is the run's: total SQNR as stored.
        assert r.errors["total"]["sqnr_db"] == g["metrics"].attrs["sqnr_db"]
    # The file spec path reads the operands as the CLI does.
    r2 = fp8lab.gemm(str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), **kw)
    assert np.array_equal(r2.d.view(np.uint32), r.d.view(np.uint32))


def test_gemm_epilogue_in_memory_and_errors():
    a, b = rng_matrix(3, 32, 64), rng_matrix(4, 64, 16)
    c = rng_matrix(5, 32, 16)
    bias = rng_matrix(6, 1, 16).reshape(16)
    r0 = fp8lab.gemm(a, b, accumulation="exact")
    r = fp8lab.gemm(a, b, accumulation="exact", c=c, beta=1.0, bias=bias)
    # Exact accumulation, FP32 output: D = f32(exact(A·B) + C + bias) per element; with C = 0 and
    # bias = 0 it is r0's D. Check the epilogue's order against float64 sums rounded once.
    want = (r0.quantized_exact.astype(np.float64) + c.astype(np.float64) + bias.astype(np.float64)).astype(np.float32)
    assert np.max(np.abs(r.d - want)) <= np.max(np.abs(want)) * 2 ** -22
    assert r.attrs["c"] == "given in memory"
    with pytest.raises(ValueError, match="c: C is added as beta"):
        fp8lab.gemm(a, b, c=c)
    with pytest.raises(ValueError, match="beta"):
        fp8lab.gemm(a, b, beta=1.0)
    with pytest.raises(ValueError, match="K"):
        fp8lab.gemm(a, rng_matrix(1, 63, 16))
    with pytest.raises(TypeError, match="a: expected float32"):
        fp8lab.gemm(a.astype(np.float16), b)
    with pytest.raises(TypeError, match="'m' describes the operands"):
        fp8lab.gemm(a, b, m=3)
    with pytest.raises(ValueError, match="fast_bits must be an integer"):
        fp8lab.gemm(a, b, accumulation="fast", fast_bits=99)


def test_check_kernel_same_verdict_as_cli(cli, tmp_path):
    a, b = rng_matrix(11, 96, 512), rng_matrix(12, 512, 64)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    # A kernel that accumulates as Hopper's wgmma: the hopper_fp8 model's own output.
    d = fp8lab.gemm(a, b, accumulation="hopper_fp8").d
    np.save(tmp_path / "d.npy", d)
    out = cli("gemm", "--a-tensor", tmp_path / "a.npy", "--b-tensor", tmp_path / "b.npy", "--observed",
              tmp_path / "d.npy", "--reference", "exact", "--json", check=False, json_out=True)
    v = fp8lab.check_kernel(d, a, b, reference="exact")
    cj = out["check"]
    assert cj["passed"] is False and not v.passed
    assert cj["comparison"]["identical"] == v.comparison["identical"]
    assert cj["comparison"]["max_ulps"] == v.comparison["max_ulps"]
    assert "hopper_fp8" in v.fit["best"]
    assert v.fit["best_comparison"]["identical"] == 96 * 64
    assert fp8lab.check_kernel(d, a, b, reference="hopper_fp8", fit=False).passed


def test_assert_kernel_matches_names_worst_element_and_model():
    a, b = rng_matrix(21, 64, 512), rng_matrix(22, 512, 32)
    d = fp8lab.gemm(a, b, accumulation="hopper_fp8").d
    fp8lab.testing.assert_kernel_matches(d, a, b, reference="hopper_fp8")
    with pytest.raises(AssertionError) as e:
        fp8lab.testing.assert_kernel_matches(d, a, b, reference="exact")
    text = str(e.value)
    assert "worst element D[" in text and "ULPs" in text
    assert "best-fitting model: MMA" in text and "(hopper_fp8)" in text
    # A within-tolerance criterion passes where bit-identity fails.
    fp8lab.testing.assert_kernel_matches(d, a, b, reference="exact", min_sqnr_db=60, fit=False)


def test_rerun_of_a_cli_run(cli, tmp_path):
    cli("gemm", "--m", 64, "--k", 128, "--n", 32, "--accumulation", "hopper_fp8", "--out", tmp_path / "s.h5",
        "--id", "g1", "-q")
    r = fp8lab.rerun(tmp_path / "s.h5", "g1")
    assert r.identical and r.differences == [] and r.datasets > 0
    with h5py.File(tmp_path / "s.h5", "r") as f:
        assert np.array_equal(f["runs/g1/output/D"][()].view(np.uint32), r.d.view(np.uint32))
    with pytest.raises(KeyError, match="no run 'nope'"):
        fp8lab.rerun(tmp_path / "s.h5", "nope")


def test_session_reader_matches_h5py(cli, tmp_path):
    cli("gemm", "--m", 32, "--k", 64, "--n", 16, "--out", tmp_path / "s.h5", "--id", "g", "-q")
    s = fp8lab.Session(tmp_path / "s.h5")
    assert s.runs == ["g"]
    info = s.run("g")
    assert info["type"] == "gemm" and info["config_dict"]["type"] == "gemm"
    with h5py.File(tmp_path / "s.h5", "r") as f:
        g = f["runs/g"]
        for path in info["datasets"]:
            assert np.array_equal(g[path][()], s.read("g", path), equal_nan=True), path
        for k, v in g["metrics"].attrs.items():
            if not k.endswith(".units") and not k.endswith(".meaning"):
                assert info["metrics"][k] == v or (np.isnan(v) and np.isnan(info["metrics"][k]))
    with pytest.raises(KeyError):
        s.read("g", "no/such")
    (tmp_path / "text.h5").write_text("not a session")
    with pytest.raises(ValueError):
        fp8lab.Session(tmp_path / "text.h5")


def test_results_are_views_not_copies():
    q = fp8lab.quantize(rng_matrix(31, 8, 64), "mx_rceil")
    # Each access is a view of the same core vector.
    assert np.shares_memory(q.codes, q.codes) and np.shares_memory(q.dequant_scales, q.dequant_scales)
    assert not q.codes.flags.writeable
    r = fp8lab.gemm(rng_matrix(32, 16, 64), rng_matrix(33, 64, 8))
    # D is handed over, not copied: the array does not own a numpy allocation.
    assert not r.d.flags.owndata and r.d.base is not None


def test_threads_run_concurrently_and_agree():
    import threading
    a, b = rng_matrix(41, 128, 512), rng_matrix(42, 512, 64)
    want = fp8lab.gemm(a, b, accumulation="hopper_fp8").d
    out = [None] * 4

    def work(i):
        out[i] = fp8lab.gemm(a, b, accumulation="hopper_fp8", threads=1).d

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for d in out:
        assert np.array_equal(d.view(np.uint32), want.view(np.uint32))


def test_python_types_and_hidden_keywords():
    x = rng_matrix(51, 4, 64)
    with pytest.raises(TypeError, match="margin: expected an integer"):
        fp8lab.quantize(x, "te_current", margin=2.5)
    with pytest.raises(TypeError, match="block: expected an integer"):
        fp8lab.quantize(x, "mx_rceil", block="1x16")
    with pytest.raises(TypeError, match="amax_history: expected a sequence of numbers"):
        fp8lab.quantize(x, "te_delayed", amax_history="abc")
    with pytest.raises(ValueError, match="seed: expected 0 <= seed"):
        fp8lab.encode(x, "E4M3FN", seed=-1)
    with pytest.raises(TypeError, match="saturate: expected True or False"):
        fp8lab.encode(x, "E4M3FN", saturate="no")
    with pytest.raises(TypeError, match="check_kernel"):
        fp8lab.gemm(x, rng_matrix(52, 64, 8), observed=np.zeros((4, 8), np.float32))
    with pytest.raises(ValueError, match="backend: the Python module runs the CPU reference"):
        fp8lab.gemm(x, rng_matrix(52, 64, 8), backend="gpu")


def test_all_zero_output_is_not_called_bf16():
    a, b = rng_matrix(53, 8, 32), rng_matrix(54, 32, 4)
    with pytest.raises(AssertionError) as e:
        fp8lab.testing.assert_kernel_matches(np.zeros((8, 4), np.float32), a, b, reference="split")
    assert "the kernel wrote BF16" not in str(e.value)


def test_session_closes(cli, tmp_path):
    cli("gemm", "--m", 8, "--k", 32, "--n", 8, "--out", tmp_path / "s.h5", "--id", "g", "-q")
    with fp8lab.Session(tmp_path / "s.h5") as s:
        assert s.runs == ["g"]
    assert s.closed
    with pytest.raises(ValueError, match="closed"):
        s.read("g", "output/D")
