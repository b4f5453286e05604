#!/usr/bin/env python3
"""FP8 Lab: torch._scaled_mm peer benchmark for tests/gpu/run_all.sh.

Same shapes and modes as bench_gpu (E4M3 x E4M3 -> BF16; per-tensor, per-row, 1x128 x 128x128;
use_fast_accum False/True) plus torch.mm in BF16, timed with CUDA events after warm-up on random
non-zero data. Writes $OUT/bench_torch.csv. Exit 77 (with a SKIP line) when torch cannot be
imported or sees no GPU; prints "unsupported" rows for modes this torch version refuses.

cuBLASLt's workspace in PyTorch defaults to 1 MiB unless CUBLASLT_WORKSPACE_SIZE (KiB) is set
before torch initialises CUDA; run_all.sh exports 32768 so both sides use 32 MiB.
"""
import csv
import os
import sys

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192)]


def main():
    quick = "--quick" in sys.argv
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(f"SKIP: bench_scaled_mm: torch cannot be imported ({e})")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: bench_scaled_mm: torch sees no CUDA device")
        return 77
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        print(f"SKIP: bench_scaled_mm: torch {torch.__version__} has no _scaled_mm / float8_e4m3fn")
        return 77
    dev = torch.device("cuda")
    print(f"bench_scaled_mm: torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"{torch.cuda.get_device_name(0)}, CUBLASLT_WORKSPACE_SIZE={os.environ.get('CUBLASLT_WORKSPACE_SIZE', 'unset')} KiB")
    shapes = SHAPES[:1] if quick else SHAPES
    target_ms = 60.0 if quick else 250.0

    def time_ms(fn):
        for _ in range(3):
            fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        one = max(s.elapsed_time(e), 1e-3)
        iters = int(min(2000, max(5, target_ms / one)))
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / iters

    def rand_fp8(rows, cols):
        mag = torch.rand(rows, cols, device=dev) * 3.5 + 0.5
        sign = torch.where(torch.rand(rows, cols, device=dev) < 0.5, -1.0, 1.0)
        return (mag * sign).to(torch.float8_e4m3fn)

    rows = []
    for (m, n, k) in shapes:
        flop = 2.0 * m * n * k
        a16 = (torch.rand(m, k, device=dev) + 0.5).to(torch.bfloat16)
        b16 = (torch.rand(n, k, device=dev) + 0.5).to(torch.bfloat16)
        ms = time_ms(lambda: torch.mm(a16, b16.t()))
        bf16 = flop / (ms * 1e-3) / 1e12
        rows.append([f"{m}x{n}x{k}", "BF16 (torch.mm)", -1, f"{bf16:.1f}", f"{ms:.4f}", ""])
        print(f"  {m}x{n}x{k:<6} BF16 torch.mm {bf16:9.1f} TFLOP/s {ms:8.3f} ms")
        del a16, b16
        a = rand_fp8(m, k)
        b = rand_fp8(n, k).t()  # [K, N] column-major: the TN layout _scaled_mm requires
        one = torch.tensor(1.0, device=dev)
        kb = k // 128
        modes = {
            "E4M3 per-tensor": [(one, one)],
            "E4M3 per-row": [(torch.rand(m, 1, device=dev) + 0.5, torch.rand(1, n, device=dev) + 0.5)],
            # 1x128 activations: (M, K/128) outer-dim-major; 128x128 weights: several layouts tried
            # because the accepted one differs between torch versions.
            "E4M3 1x128 x 128x128": [
                ((torch.rand(kb, m, device=dev) + 0.5).t(), torch.rand(n // 128, kb, device=dev) + 0.5),
                ((torch.rand(kb, m, device=dev) + 0.5).t(), torch.rand(kb, n // 128, device=dev) + 0.5),
                ((torch.rand(kb, m, device=dev) + 0.5).t(), (torch.rand(n // 128, kb, device=dev) + 0.5).t()),
            ],
        }
        for name, variants in modes.items():
            for fast in (False, True):
                result, note = None, ""
                for sa, sb in variants:
                    try:
                        fn = lambda sa=sa, sb=sb: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb,
                                                                    out_dtype=torch.bfloat16, use_fast_accum=fast)
                        fn()
                        torch.cuda.synchronize()
                        result = time_ms(fn)
                        note = f"scale_a {tuple(sa.shape)} stride {sa.stride()}, scale_b {tuple(sb.shape)} stride {sb.stride()}"
                        break
                    except Exception as e:  # noqa: BLE001
                        note = "unsupported: " + str(e).splitlines()[0][:160]
                if result is None:
                    rows.append([f"{m}x{n}x{k}", name, int(fast), "", "", note])
                    print(f"  {m}x{n}x{k:<6} {name:<22} fast={int(fast)} {note}")
                    continue
                tf = flop / (result * 1e-3) / 1e12
                rows.append([f"{m}x{n}x{k}", name, int(fast), f"{tf:.1f}", f"{result:.4f}", note])
                print(f"  {m}x{n}x{k:<6} {name:<22} fast={int(fast)} {tf:9.1f} TFLOP/s {result:8.3f} ms  x{tf / bf16:.2f} vs BF16")
        del a, b
        torch.cuda.empty_cache()
    out = os.path.join(os.environ.get("OUT", "."), "bench_torch.csv")
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "config", "fast_accum", "tflops", "ms", "note"])
        w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
