// FP8 Lab — CPU-side checks of gpu/ (no GPU needed, but the CUDA toolkit: it links fp8lab_gpu and
// cuBLASLt's host API). The kernels' per-element numerics are core's host/device functions and are
// tested in every build by tests/core/scaling/test_host_device.cpp. Here:
//  * padding, TN packing, scale-tensor layouts per cuBLASLt mode, mode pairing/promotion;
//  * cuBLASLt descriptor set-up (host-only API), attribute types, problem checks;
//  * unsupported-combination reasons and the backend factory (core/backend) without a GPU;
//    error messages.
// Expected values are hand-derived (comments give the derivation) or come from the CPU
// reference implementations (core/formats, core/scaling), which have their own oracle tests.
#include "check_util.h"
#include "gemm_cases.h"
#include "gemm/gemm.h"

#include "cublaslt_lazy.h"
#include "cuda_error.h"
#include "backend/backend_factory.h"
#include "cuda_gemm_backend.h"
#include "device_probe.h"
#include "lt_matmul.h"
#include "scale_layout.h"
#include "device_quantize.h"
#include "scaling/scaling.h"
#include "gemm/random_matrix.h"

#include <cfloat>
#include <limits>
#include <vector>

using namespace fp8lab;
using namespace fp8lab::gpu;
using fp8lab::checks::Checker;
using fp8lab::checks::sameFloat;

namespace {

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

QuantizedTensor makeTensor(int64_t rows, int64_t cols, ScaleBlock block, const Format& f = Format::E4M3FN()) {
  QuantizedTensor t;
  t.rows = rows;
  t.cols = cols;
  t.format = &f;
  t.block = block;
  t.codes.resize(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < t.codes.size(); ++i) t.codes[i] = static_cast<uint8_t>(1 + i % 100);
  t.dequant_scales.resize(static_cast<size_t>(t.blockRows() * t.blockCols()));
  t.quant_scales.resize(t.dequant_scales.size());
  return t;
}

void testPaddingAndPacking(Checker& c) {
  // 100 → 112, 200 → 208, 300 → 304 (next multiples of 16); K → 384 with block modes (3·128).
  const PaddedShape p = padShape(100, 200, 300, false);
  c.expect(p.mp == 112 && p.np == 208 && p.kp == 304, "padShape(100,200,300) = 112, 208, 304");
  c.expect(padShape(100, 200, 300, true).kp == 384, "padShape block modes: K 300 → 384");
  c.expect(padShape(16, 32, 128, true).mp == 16 && padShape(16, 32, 128, true).kp == 128, "aligned sizes unchanged");
  bool threw = false;
  try {
    (void)padShape(0, 1, 1, false);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  c.expect(threw, "padShape rejects M = 0");

  // A [3,5] → [16,16] K-major: row i copied to out[i*16 .. i*16+4], rest zero.
  QuantizedTensor a = makeTensor(3, 5, {3, 5});
  const auto pa = packKMajor(a, Operand::A, 16, 16);
  bool ok = pa.size() == 256;
  for (int i = 0; i < 16 && ok; ++i)
    for (int k = 0; k < 16 && ok; ++k) {
      const uint8_t want = (i < 3 && k < 5) ? a.codes[static_cast<size_t>(i * 5 + k)] : 0;
      ok = pa[static_cast<size_t>(i * 16 + k)] == want;
    }
  c.expect(ok, "packKMajor(A 3x5) = rows copied into 16x16, zero padding");
  // B [K=5, N=3] → [N_pad=16, K_pad=32]: out[n*32 + k] = B[k, n] (the TN transpose).
  QuantizedTensor b = makeTensor(5, 3, {5, 3});
  const auto pb = packKMajor(b, Operand::B, 16, 32);
  ok = pb.size() == 512;
  for (int n = 0; n < 16 && ok; ++n)
    for (int k = 0; k < 32 && ok; ++k) {
      const uint8_t want = (n < 3 && k < 5) ? b.codes[static_cast<size_t>(k * 3 + n)] : 0;
      ok = pb[static_cast<size_t>(n * 32 + k)] == want;
    }
  c.expect(ok, "packKMajor(B 5x3) = transposed into 16x32 (K contiguous), zero padding");
  // A large B to exercise the blocked transpose across tile edges.
  QuantizedTensor big = makeTensor(200, 130, {200, 130});
  const auto pbig = packKMajor(big, Operand::B, 144, 208);
  ok = true;
  for (int n = 0; n < 130 && ok; ++n)
    for (int k = 0; k < 200 && ok; ++k)
      ok = pbig[static_cast<size_t>(n * 208 + k)] == big.codes[static_cast<size_t>(k * 130 + n)];
  c.expect(ok, "packKMajor(B 200x130) transposes across 64x64 tiles");
  threw = false;
  try {
    (void)packKMajor(a, Operand::A, 2, 16);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  c.expect(threw, "packKMajor rejects a pad smaller than the operand");
}

void testScaleLayouts(Checker& c) {
  // A per-row (block [1,K]), M = 20, K = 256: OUTER_VEC of M_pad = 32: s[i] = i+1, padding 1.
  QuantizedTensor a = makeTensor(20, 256, {1, 256});
  for (int i = 0; i < 20; ++i) a.dequant_scales[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  c.expect(nativeScaleMode(a, Operand::A) == LtScaleMode::OuterVec, "A per-row → OUTER_VEC_32F");
  auto s = ltScaleTensor(a, Operand::A, LtScaleMode::OuterVec, 32, 256);
  bool ok = s.size() == 32;
  for (int i = 0; i < 32 && ok; ++i) ok = s[static_cast<size_t>(i)] == (i < 20 ? i + 1.0f : 1.0f);
  c.expect(ok, "OUTER_VEC layout: one scale per row, padded rows 1.0");
  // The same per-row scales broadcast to VEC128 (K_pad = 256 → 2 K-blocks): index kb*32 + o.
  s = ltScaleTensor(a, Operand::A, LtScaleMode::Vec128, 32, 256);
  ok = s.size() == 64;
  for (int kb = 0; kb < 2 && ok; ++kb)
    for (int o = 0; o < 32 && ok; ++o) ok = s[static_cast<size_t>(kb * 32 + o)] == (o < 20 ? o + 1.0f : 1.0f);
  c.expect(ok, "per-row scales broadcast to VEC128 (outer fastest)");

  // A 1x128, M = 20, K = 300 (3 K-blocks, the last partial), K_pad = 384: scale(i, kb) = 100 i + kb + 1
  // at kb*M_pad + i.
  QuantizedTensor a2 = makeTensor(20, 300, {1, 128});
  for (int i = 0; i < 20; ++i)
    for (int kb = 0; kb < 3; ++kb) a2.dequant_scales[static_cast<size_t>(i * 3 + kb)] = 100.0f * i + kb + 1;
  c.expect(nativeScaleMode(a2, Operand::A) == LtScaleMode::Vec128, "A 1x128 → VEC128_32F");
  s = ltScaleTensor(a2, Operand::A, LtScaleMode::Vec128, 32, 384);
  ok = s.size() == 96 && static_cast<int64_t>(s.size()) == ltScaleCount(LtScaleMode::Vec128, 32, 384);
  for (int kb = 0; kb < 3 && ok; ++kb)
    for (int o = 0; o < 32 && ok; ++o)
      ok = s[static_cast<size_t>(kb * 32 + o)] == (o < 20 ? 100.0f * o + kb + 1 : 1.0f);
  c.expect(ok, "VEC128 layout: scale(o, kb) at kb*outer + o, partial last block, padded rows 1.0");

  // B 128x128, K = 256, N = 300: grid [2 K-blocks][3 N-blocks], scale(kb, nb) = 10 kb + nb + 1.
  // N_pad = 304 → 3 outer blocks; LD = roundup(2, 4) = 4: index ob*4 + kb; kb = 2, 3 are pitch padding.
  QuantizedTensor b = makeTensor(256, 300, {128, 128});
  for (int kb = 0; kb < 2; ++kb)
    for (int nb = 0; nb < 3; ++nb) b.dequant_scales[static_cast<size_t>(kb * 3 + nb)] = 10.0f * kb + nb + 1;
  c.expect(nativeScaleMode(b, Operand::B) == LtScaleMode::Blk128x128, "B 128x128 → BLK128x128_32F");
  s = ltScaleTensor(b, Operand::B, LtScaleMode::Blk128x128, 304, 256);
  ok = s.size() == 12;
  for (int ob = 0; ob < 3 && ok; ++ob)
    for (int kb = 0; kb < 4 && ok; ++kb)
      ok = s[static_cast<size_t>(ob * 4 + kb)] == (kb < 2 ? 10.0f * kb + ob + 1 : 1.0f);
  c.expect(ok, "BLK128x128 layout: scale(ob, kb) at ob*roundup(KB,4) + kb");
  // The same 128x128 scales expanded to VEC128 (used for 128x128 x 128x128): (o, kb) = scale(kb, o/128).
  s = ltScaleTensor(b, Operand::B, LtScaleMode::Vec128, 304, 256);
  ok = s.size() == 608;
  for (int kb = 0; kb < 2 && ok; ++kb)
    for (int o = 0; o < 304 && ok; ++o)
      ok = s[static_cast<size_t>(kb * 304 + o)] == (o < 300 ? 10.0f * kb + o / 128 + 1 : 1.0f);
  c.expect(ok, "128x128 scales expanded to VEC128 exactly");

  // B 128x1 (1x128 along K of B), K = 256, N = 16: VEC128 index kb*16 + n.
  QuantizedTensor b2 = makeTensor(256, 16, {128, 1});
  for (size_t i = 0; i < b2.dequant_scales.size(); ++i) b2.dequant_scales[i] = 0.5f + static_cast<float>(i);
  c.expect(nativeScaleMode(b2, Operand::B) == LtScaleMode::Vec128, "B 128x1 → VEC128_32F");
  s = ltScaleTensor(b2, Operand::B, LtScaleMode::Vec128, 16, 256);
  ok = s.size() == 32;
  for (int kb = 0; kb < 2 && ok; ++kb)
    for (int n = 0; n < 16 && ok; ++n) ok = s[static_cast<size_t>(kb * 16 + n)] == 0.5f + kb * 16 + n;
  c.expect(ok, "VEC128 layout for B: grid [kb][n] equals cuBLASLt's kb*N + n");

  // Per tensor: one value.
  QuantizedTensor t = makeTensor(10, 20, {10, 20});
  t.dequant_scales[0] = 0.125f;
  c.expect(nativeScaleMode(t, Operand::A) == LtScaleMode::Scalar, "per-tensor → SCALAR_32F");
  s = ltScaleTensor(t, Operand::A, LtScaleMode::Scalar, 16, 32);
  c.expect(s.size() == 1 && s[0] == 0.125f, "SCALAR layout: one value");
  s = ltScaleTensor(t, Operand::A, LtScaleMode::OuterVec, 16, 32);
  c.expect(s.size() == 16 && s[9] == 0.125f && s[10] == 1.0f, "per-tensor broadcast to OUTER_VEC");

  // Granularities cuBLASLt cannot express.
  std::string why;
  QuantizedTensor col = makeTensor(32, 256, {32, 1}); // per-column of A: varies along K
  c.expect(!nativeScaleMode(col, Operand::A, &why) && contains(why, "along K"), "A per-column refused: " + why);
  QuantizedTensor b64 = makeTensor(32, 256, {1, 64});
  c.expect(!nativeScaleMode(b64, Operand::A, &why) && contains(why, "128"), "1x64 blocks refused: " + why);
  QuantizedTensor mx = makeTensor(32, 256, {1, 32});
  mx.scale_codes.assign(mx.dequant_scales.size(), 127);
  c.expect(!nativeScaleMode(mx, Operand::A, &why) && contains(why, "Blackwell"), "MX E8M0 refused: " + why);
  QuantizedTensor w = makeTensor(32, 512, {1, 256}); // 1x256 = two identical 1x128 blocks
  c.expect(nativeScaleMode(w, Operand::A) == LtScaleMode::Vec128, "1x256 blocks expressible as VEC128");
  bool threw = false;
  try {
    (void)ltScaleTensor(a2, Operand::A, LtScaleMode::OuterVec, 32, 384);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  c.expect(threw, "ltScaleTensor refuses 1x128 scales as OUTER_VEC (not exact)");
}

void testPairing(Checker& c) {
  using M = LtScaleMode;
  struct Row {
    M a, b, ea, eb;
    bool note;
  };
  const Row rows[] = {
      {M::Scalar, M::Scalar, M::Scalar, M::Scalar, false},
      {M::OuterVec, M::OuterVec, M::OuterVec, M::OuterVec, false},
      {M::Scalar, M::OuterVec, M::OuterVec, M::OuterVec, true},
      {M::OuterVec, M::Scalar, M::OuterVec, M::OuterVec, true},
      {M::Vec128, M::Vec128, M::Vec128, M::Vec128, false},
      {M::Vec128, M::Blk128x128, M::Vec128, M::Blk128x128, false},
      {M::Blk128x128, M::Vec128, M::Blk128x128, M::Vec128, false},
      {M::Blk128x128, M::Blk128x128, M::Vec128, M::Blk128x128, true},
      {M::Scalar, M::Blk128x128, M::Vec128, M::Blk128x128, true},
      {M::OuterVec, M::Vec128, M::Vec128, M::Vec128, true},
  };
  for (const Row& r : rows) {
    const ModePair p = choosePairing(r.a, r.b);
    c.expect(p.a == r.ea && p.b == r.eb && p.note.empty() != r.note,
             std::string("pairing ") + toString(r.a) + " x " + toString(r.b) + " → " + toString(p.a) + " x " +
                 toString(p.b) + (p.note.empty() ? "" : " (" + p.note + ")"));
  }
}

void testDescriptors(Checker& c) {
  // Descriptor set-up is host-only: works without a GPU.
  float dummy[4];
  LtProblem p;
  p.m = 256;
  p.n = 128;
  p.k = 512;
  p.a_type = CUDA_R_8F_E4M3;
  p.b_type = CUDA_R_8F_E5M2;
  p.d_type = CUDA_R_16BF;
  p.a_mode = LtScaleMode::Vec128;
  p.b_mode = LtScaleMode::Blk128x128;
  p.fast_accum = true;
  LtPointers ptr;
  ptr.a_scale = dummy;
  ptr.b_scale = dummy + 1;
  try {
    LtOperation op(p, ptr);
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_T, "TRANSA = T");
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_N, "TRANSB = N");
    c.expect(op.desc.attribute<int8_t>(CUBLASLT_MATMUL_DESC_FAST_ACCUM) == 1, "FAST_ACCUM (int8_t) = 1");
    c.expect(op.desc.attribute<const void*>(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER) == dummy, "A scale pointer set");
    c.expect(op.desc.attribute<const void*>(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER) == dummy + 1, "B scale pointer set");
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_A_SCALE_MODE) == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F,
             "A scale mode = VEC128_32F (4)");
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_B_SCALE_MODE) ==
                 CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
             "B scale mode = BLK128x128_32F (5)");
#endif
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_32F, "compute type 32F");
    c.expect(op.desc.attribute<int32_t>(CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_32F, "scale type R_32F");
    auto layout = [](cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a) {
      uint64_t v = 0;
      size_t w = 0;
      if (a == CUBLASLT_MATRIX_LAYOUT_TYPE) {
        uint32_t t = 0;
        cublasLtMatrixLayoutGetAttribute(l, a, &t, sizeof t, &w);
        return static_cast<uint64_t>(t);
      }
      if (a == CUBLASLT_MATRIX_LAYOUT_LD) {
        int64_t ld = 0;
        cublasLtMatrixLayoutGetAttribute(l, a, &ld, sizeof ld, &w);
        return static_cast<uint64_t>(ld);
      }
      cublasLtMatrixLayoutGetAttribute(l, a, &v, sizeof v, &w);
      return v;
    };
    // Lt-A: K x m, ld K (TRANSA = T); Lt-B: K x n, ld K; D: m x n, ld m.
    c.expect(layout(op.a.get(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 512 &&
                 layout(op.a.get(), CUBLASLT_MATRIX_LAYOUT_COLS) == 256 &&
                 layout(op.a.get(), CUBLASLT_MATRIX_LAYOUT_LD) == 512 &&
                 layout(op.a.get(), CUBLASLT_MATRIX_LAYOUT_TYPE) == CUDA_R_8F_E4M3,
             "Lt-A layout: E4M3, 512 x 256, ld 512");
    c.expect(layout(op.b.get(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 512 &&
                 layout(op.b.get(), CUBLASLT_MATRIX_LAYOUT_COLS) == 128 &&
                 layout(op.b.get(), CUBLASLT_MATRIX_LAYOUT_TYPE) == CUDA_R_8F_E5M2,
             "Lt-B layout: E5M2, 512 x 128, ld 512");
    c.expect(layout(op.d.get(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 256 &&
                 layout(op.d.get(), CUBLASLT_MATRIX_LAYOUT_LD) == 256 &&
                 layout(op.d.get(), CUBLASLT_MATRIX_LAYOUT_TYPE) == CUDA_R_16BF,
             "D layout: BF16, 256 x 128, ld 256");
    // The attribute size is what cuBLASLt validates: FAST_ACCUM as a 4-byte int is rejected.
    bool threw = false;
    try {
      op.desc.set<int32_t>(CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1);
    } catch (const GpuError& e) {
      threw = contains(e.what(), "CUBLAS_STATUS_INVALID_VALUE") && contains(e.what(), "cublasLtMatmulDescSetAttribute");
    }
    c.expect(threw, "FAST_ACCUM as int32_t rejected with a GpuError naming the call and CUBLAS_STATUS_INVALID_VALUE");
  } catch (const std::exception& e) {
    c.expect(false, std::string("descriptor set-up threw: ") + e.what());
  }
  // FP8 output: D scale, AMAX_D, BF16 C.
  LtProblem q = p;
  q.d_type = CUDA_R_8F_E4M3;
  q.a_mode = q.b_mode = LtScaleMode::Scalar;
  q.fast_accum = false;
  ptr.d_scale = dummy + 2;
  ptr.amax_d = dummy + 3;
  try {
    LtOperation op(q, ptr);
    c.expect(op.desc.attribute<const void*>(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER) == dummy + 2, "D scale pointer set");
    c.expect(op.desc.attribute<void*>(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER) == dummy + 3, "AMAX_D pointer set");
    uint32_t ct = 0;
    size_t w = 0;
    cublasLtMatrixLayoutGetAttribute(op.c.get(), CUBLASLT_MATRIX_LAYOUT_TYPE, &ct, sizeof ct, &w);
    c.expect(ct == CUDA_R_16BF, "C is BF16 for an FP8 D");
    c.expect(op.desc.attribute<int8_t>(CUBLASLT_MATMUL_DESC_FAST_ACCUM) == 0, "FAST_ACCUM = 0");
  } catch (const std::exception& e) {
    c.expect(false, std::string("FP8-output descriptor set-up threw: ") + e.what());
  }

  // Problem checks.
  LtProblem bad = p;
  bad.m = 100;
  c.expect(contains(checkLtProblem(bad), "multiples of 16"), "m = 100 refused (16-byte rule)");
  bad = p;
  bad.a_type = bad.b_type = CUDA_R_8F_E5M2;
  c.expect(contains(checkLtProblem(bad), "E5M2 x E5M2"), "E5M2 x E5M2 refused");
  bad = p;
  bad.a_mode = bad.b_mode = LtScaleMode::Blk128x128;
  c.expect(contains(checkLtProblem(bad), "128x128 x 128x128"), "128x128 x 128x128 refused");
  bad = p;
  bad.k = 144;
  c.expect(contains(checkLtProblem(bad), "multiple of 128"), "block modes with K = 144 refused");
  bad = p;
  bad.a_mode = LtScaleMode::Scalar;
  c.expect(contains(checkLtProblem(bad), "pair only"), "SCALAR x BLK128x128 refused (promote first)");
  LtProblem bf = p;
  bf.a_type = bf.b_type = CUDA_R_16BF;
  c.expect(checkLtProblem(bf).empty(), "BF16 x BF16 -> BF16 accepted");
  bool threw = false;
  try {
    LtOperation op(bad, ptr);
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "pair only");
  }
  c.expect(threw, "LtOperation throws std::invalid_argument with the reason");
}

void testUnsupportedReasons(Checker& c) {
  QuantizedTensor a = makeTensor(64, 256, {64, 256});
  QuantizedTensor b = makeTensor(256, 32, {256, 32});
  GemmOptions opt;
  c.expect(cudaUnsupportedReason(a, b, opt, 90, 130100).empty(), "E4M3 per-tensor split on sm_90: supported");
  QuantizedTensor fnuz = makeTensor(64, 256, {64, 256}, Format::E4M3FNUZ());
  c.expect(contains(cudaUnsupportedReason(fnuz, b, opt, 90, 130100), "FNUZ"), "FNUZ → CPU with reason");
  QuantizedTensor fp4 = makeTensor(64, 256, {64, 256}, Format::E2M1());
  c.expect(contains(cudaUnsupportedReason(fp4, b, opt, 90, 130100), "Blackwell"), "FP4 → CPU with reason");
  QuantizedTensor a5 = makeTensor(64, 256, {64, 256}, Format::E5M2());
  QuantizedTensor b5 = makeTensor(256, 32, {256, 32}, Format::E5M2());
  c.expect(contains(cudaUnsupportedReason(a5, b5, opt, 90, 130100), "E5M2 x E5M2"), "E5M2 x E5M2 → reason");
  c.expect(cudaUnsupportedReason(a5, b, opt, 90, 130100).empty(), "E5M2 x E4M3 supported");
  QuantizedTensor mx = makeTensor(64, 256, {1, 32});
  mx.scale_codes.assign(mx.dequant_scales.size(), 127);
  c.expect(contains(cudaUnsupportedReason(mx, b, opt, 90, 130100), "VEC32_UE8M0"), "MX block-32 → reason");
  GemmOptions ex = opt;
  ex.accumulation = Accumulation::Exact;
  c.expect(contains(cudaUnsupportedReason(a, b, ex, 90, 130100), "CPU reference model"), "Exact → CPU");
  ex.accumulation = Accumulation::FP32;
  c.expect(contains(cudaUnsupportedReason(a, b, ex, 90, 130100), "CPU reference model"), "FP32 model → CPU");
  ex.accumulation = Accumulation::FastAccum;
  c.expect(contains(cudaUnsupportedReason(a, b, ex, 90, 130100), "CPU model"), "promoting FastAccum model → CPU");
  ex.fast_accum_promotes = false;
  c.expect(cudaUnsupportedReason(a, b, ex, 90, 130100).empty(), "FastAccum without promotion → FAST_ACCUM=1 on GPU");
  QuantizedTensor row = makeTensor(64, 256, {1, 256});
  c.expect(contains(cudaUnsupportedReason(row, b, opt, 89, 130100), "sm_90"), "per-row on sm_89 → reason");
  c.expect(contains(cudaUnsupportedReason(row, b, opt, 100, 130100), "sm_90"), "per-row on sm_100 → reason");
  c.expect(cudaUnsupportedReason(a, b, opt, 100, 130100).empty(), "per-tensor on sm_100: supported");
  c.expect(contains(cudaUnsupportedReason(a, b, opt, 80, 130100), "no FP8 tensor cores"), "sm_80 → reason");
  c.expect(contains(cudaUnsupportedReason(row, b, opt, 90, 120800), "12.9"), "cuBLASLt 12.8 + per-row → reason");
  GemmOptions e5 = opt;
  e5.output = OutputType::E5M2;
  c.expect(contains(cudaUnsupportedReason(a, b, e5, 90, 130100), "E5M2 output"), "E4M3xE4M3->E5M2 → reason");
}

void testSelectionWithoutGpu(Checker& c) {
  std::string why = "untouched";
  const auto cpu = makeGemmBackend(BackendRequest::Cpu, &why);
  c.expect(cpu && cpu->name() == "cpu" && !cpu->hasGpu() && cpu->noGpuReason().empty() && why == "untouched",
           "--backend cpu → CPU, no probe");
  const ProbeResult probe = probeDevices();
  if (probe.hasDevice()) {
    std::printf("  (a GPU is present: the no-GPU selection checks are skipped)\n");
    return;
  }
  const auto autos = makeGemmBackend(BackendRequest::Auto);
  c.expect(autos && autos->name() == "cpu" && !autos->hasGpu() && contains(autos->noGpuReason(), "no CUDA device"),
           "auto without GPU → CPU with the reason: " + (autos ? autos->noGpuReason() : std::string("null")));
  std::string error;
  const auto g = makeGemmBackend(BackendRequest::Gpu, &error);
  c.expect(!g && contains(error, "no CUDA device"), "gpu without GPU → refused with the reason: " + error);
  why.clear();
  c.expect(!makeCudaGemmBackend(&why) && !why.empty(), "makeCudaGemmBackend → nullptr + reason: " + why);
}

void testErrors(Checker& c) {
  bool ok = false;
  try {
    checkLt(15, "cublasLtMatmulAlgoGetHeuristic(...)");
  } catch (const GpuError& e) {
    ok = contains(e.what(), "CUBLAS_STATUS_NOT_SUPPORTED") && contains(e.what(), "cublasLtMatmulAlgoGetHeuristic") &&
         e.code() == 15 && e.api() == "cublasLt";
  }
  c.expect(ok, "checkLt names the call and the status");
  ok = false;
  try {
    checkCuda(35, "cudaGetDeviceCount(&n)");
  } catch (const GpuError& e) {
    ok = contains(e.what(), "cudaErrorInsufficientDriver") && contains(e.what(), "cudaGetDeviceCount");
  }
  c.expect(ok, "checkCuda names the call and the error");
  ok = false;
  try {
    checkCuda(2, "cudaMalloc(&p, n)");
  } catch (const GpuError& e) {
    ok = e.outOfMemory();
  }
  c.expect(ok, "cudaErrorMemoryAllocation is reported as out of memory");
}

/// Which current presets the device quantize takes, and why it refuses the rest.
void testDeviceQuantizeReasons(Checker& c) {
  for (const ScalingPresetInfo& info : scalingPresets()) {
    const auto cfg = scalingPreset(info.name);
    if (info.delayed || !cfg) continue;
    for (const Format* f : {&Format::E4M3FN(), &Format::E5M2()})
      c.expect(deviceQuantizeUnsupportedReason(*cfg, *f).empty(),
               info.name + " " + f->name() + ": every current preset runs on the device");
  }
  ScalingConfig sr = *scalingPreset("te_current");
  sr.encode.rounding = Rounding::Stochastic;
  c.expect(contains(deviceQuantizeUnsupportedReason(sr, Format::E4M3FN()), "nearest even"),
           "stochastic rounding is CPU-only, with a reason");
  c.expect(contains(deviceQuantizeUnsupportedReason(*scalingPreset("mx_rceil"), Format::E8M0FNU()), "E8M0FNU"),
           "E8M0 elements are refused with the format named");
}

/// The exact-by-construction operands of check_gpu_gemm really are exact: on the CPU, the
/// Exact (double), FP32, SplitFP32 and (non-promoting, 14-bit) FastAccum models all give the
/// same bits for every scale pairing and output type, so any accumulation order the GPU uses
/// must give them too.
void testExactConstruction(Checker& c) {
  using checks::Gran;
  auto cpu = makeCpuGemmBackend();
  const std::pair<Gran, Gran> pairs[] = {{Gran::Tensor, Gran::Tensor},   {Gran::Outer, Gran::Outer},
                                         {Gran::Block1D, Gran::Block2D}, {Gran::Block2D, Gran::Block1D},
                                         {Gran::Block2D, Gran::Block2D}, {Gran::Tensor, Gran::Outer}};
  uint32_t seed = 1;
  for (const auto& pr : pairs)
    for (OutputType out : {OutputType::FP32, OutputType::BF16, OutputType::E4M3FN}) {
      const QuantizedTensor a = checks::intTensor(200, 384, Format::E4M3FN(), pr.first, true, seed++);
      const QuantizedTensor b = checks::intTensor(384, 136, Format::E5M2(), pr.second, false, seed++);
      GemmOptions o;
      o.output = out;
      o.output_quant_scale = out == OutputType::E4M3FN ? 0.015625f : 1.0f;
      o.accumulation = Accumulation::Exact;
      const GemmOutput ref = cpu->run(a, b, o);
      bool same = true;
      for (Accumulation acc : {Accumulation::FP32, Accumulation::SplitFP32, Accumulation::FastAccum}) {
        GemmOptions p = o;
        p.accumulation = acc;
        p.fast_accum_promotes = false;
        const GemmOutput r = cpu->run(a, b, p);
        for (size_t i = 0; i < r.d.size() && same; ++i) same = sameFloat(r.d[i], ref.d[i]);
        same = same && r.d_codes == ref.d_codes;
      }
      double amax = 0;
      for (float v : ref.d) amax = std::max(amax, static_cast<double>(std::fabs(v)));
      c.expect(same && amax > 0, std::string("exact construction ") + checks::granName(pr.first) + " x " +
                                     checks::granName(pr.second) + " -> " + toString(out) +
                                     ": every CPU accumulation model agrees bit for bit");
    }
}

/// The bounds check_gpu_gemm applies, validated on the CPU models: sequential FP32 vs SplitFP32
/// stays inside the strict FP32 split bound, and the 14-bit FastAccum model (group 32, promoted
/// every 128) inside the bound plus the tensor-core term — so a GPU failure there means the GPU
/// is worse than these models, not that the bound is mis-coded.
void testSplitBounds(Checker& c) {
  auto cpu = makeCpuGemmBackend();
  const int64_t M = 48, N = 40, K = 4096;
  for (const char* preset : {"te_current", "torchao_rowwise", "deepgemm_1x128"}) {
    RandomMatrixOptions o;
    o.distribution = Distribution::Outliers;
    o.outlier_fraction = 0.002;
    o.outlier_factor = 50;
    const std::vector<float> xa = randomMatrix(M, K, 41, o), xb = randomMatrix(K, N, 42, o);
    const auto cfg = scalingPreset(preset);
    const QuantizedTensor a = quantize(xa.data(), M, K, Format::E4M3FN(), *cfg, Axis::Cols);
    const QuantizedTensor b = quantize(xb.data(), K, N, Format::E4M3FN(), *cfg, Axis::Rows);
    std::vector<double> absprod, hw;
    checks::splitBoundTerms(a, b, absprod, hw);
    const double gamma = checks::splitGamma(K);
    GemmOptions split, seq, fast;
    seq.accumulation = Accumulation::FP32;
    fast.accumulation = Accumulation::FastAccum;
    fast.fast_accum_promotes = true;
    const GemmOutput ds = cpu->run(a, b, split), dq = cpu->run(a, b, seq), df = cpu->run(a, b, fast);
    double r_seq = 0, r_fast = 0, r_fast_strict = 0;
    for (size_t i = 0; i < ds.d.size(); ++i) {
      const double b1 = 2 * gamma * absprod[i];
      r_seq = std::max(r_seq, std::fabs(static_cast<double>(dq.d[i]) - ds.d[i]) / b1);
      r_fast = std::max(r_fast, std::fabs(static_cast<double>(df.d[i]) - ds.d[i]) / (b1 + hw[i]));
      r_fast_strict = std::max(r_fast_strict, std::fabs(static_cast<double>(df.d[i]) - ds.d[i]) / b1);
    }
    c.expect(r_seq <= 1.0, std::string(preset) + ": CPU FP32 vs SplitFP32 within the FP32 split bound (ratio " +
                               std::to_string(r_seq) + ")");
    c.expect(r_fast <= 1.0, std::string(preset) +
                                ": CPU 14-bit FastAccum model vs SplitFP32 within bound + tensor-core term (ratio " +
                                std::to_string(r_fast) + ")");
    std::printf("  split bounds %-16s FP32 %.3g, 14-bit model %.3g (strict %.3g)\n", preset, r_seq, r_fast,
                r_fast_strict);
  }
}

} // namespace

/// cuBLASLt is opened on first use (gpu/cublaslt_lazy.h): a probe on a machine without a device
/// leaves it unloaded, the first cuBLASLt call loads it, and the loaded library is the one whose
/// headers the build compiled against (cublas_api.h: CUBLAS_VERSION = major·10000 + minor·100 +
/// patch, the value cublasLtGetVersion returns).
void testLazyCublasLt(Checker& c, const ProbeResult& probe) {
  c.expect(cublasLtLoaded() == probe.hasDevice(),
           std::string("after the probe cuBLASLt is ") + (cublasLtLoaded() ? "loaded" : "not loaded") +
               (probe.hasDevice() ? " (a device exists: the probe asks its version)" : " (no device)"));
  std::string why = "untouched";
  c.expect(cublasLtAvailable(&why) && why.empty(), "cuBLASLt loads on first use: " + why);
  c.expect(cublasLtLoaded(), "cuBLASLt is loaded after its first use");
  c.expect(cublasLtGetVersion() == size_t(CUBLAS_VERSION),
           "cublasLtGetVersion() " + std::to_string(cublasLtGetVersion()) + " = the headers' CUBLAS_VERSION " +
               std::to_string(CUBLAS_VERSION));
  c.expect(std::string(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED",
           "calls reach the library: cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED)");
}

int main() {
  Checker c("test_gpu_host");
  const ProbeResult probe = probeDevices();
  std::printf("GPU core host-side checks (%s)\n", probe.summary().c_str());
  testLazyCublasLt(c, probe);
  testErrors(c);
  testPaddingAndPacking(c);
  testScaleLayouts(c);
  testPairing(c);
  testDescriptors(c);
  testUnsupportedReasons(c);
  testSelectionWithoutGpu(c);
  testDeviceQuantizeReasons(c);
  testExactConstruction(c);
  testSplitBounds(c);
  return c.finish();
}
