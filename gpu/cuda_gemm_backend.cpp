#include "cuda_gemm_backend.h"

#include "cuda_raii.h"
#include "lt_matmul.h"
#include "scale_layout.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

namespace fp8lab::gpu {
namespace {

/// cuBLASLt data type of a format, or nullopt.
std::optional<cudaDataType_t> ltTypeOf(const Format* f) {
  if (!f) return std::nullopt;
  const FormatSpec& s = f->spec();
  if (s.exponent_bits == 4 && s.mantissa_bits == 3 && s.bias == 7 && s.specials == SpecialCodes::FN)
    return CUDA_R_8F_E4M3;
  if (s.exponent_bits == 5 && s.mantissa_bits == 2 && s.bias == 15 && s.specials == SpecialCodes::IEEE)
    return CUDA_R_8F_E5M2;
  return std::nullopt;
}

std::string formatReason(const Format* f, const char* which) {
  if (!f) return std::string("operand ") + which + " has no format";
  const FormatSpec& s = f->spec();
  if (s.specials == SpecialCodes::FNUZ)
    return std::string("operand ") + which + " is " + f->name() +
           ": CUDA has no FNUZ data type (an AMD format; hipBLASLt only), so it runs on the CPU";
  if (s.specials == SpecialCodes::FiniteOnly)
    return std::string("operand ") + which + " is " + f->name() +
           " (MX FP6/FP4): cuBLASLt GEMMs on these types are Blackwell features, not available on Hopper";
  return std::string("operand ") + which + " is " + f->name() +
         ": cuBLASLt FP8 GEMM takes only E4M3FN (CUDA_R_8F_E4M3) and E5M2 (CUDA_R_8F_E5M2)";
}

std::optional<cudaDataType_t> outputType(OutputType t) {
  switch (t) {
  case OutputType::FP32:
    return CUDA_R_32F;
  case OutputType::BF16:
    return CUDA_R_16BF;
  case OutputType::FP16:
    return CUDA_R_16F;
  case OutputType::E4M3FN:
    return CUDA_R_8F_E4M3;
  case OutputType::E5M2:
    return CUDA_R_8F_E5M2;
  }
  return std::nullopt;
}

/// v in cuBLASLt type t (FP32, BF16 or FP16) at dst; the caller has checked that v converts exactly.
void storeAs(cudaDataType_t t, float v, uint8_t* dst) {
  if (t == CUDA_R_32F) {
    std::memcpy(dst, &v, 4);
    return;
  }
  const Format& f = t == CUDA_R_16BF ? Format::BF16() : Format::FP16();
  const uint16_t h = static_cast<uint16_t>(f.encode(v, EncodeOptions{}));
  std::memcpy(dst, &h, 2);
}

/// "" when every value of v is exactly representable in cuBLASLt type t, else which is not.
std::string notExactIn(cudaDataType_t t, const std::vector<float>& v, const char* what) {
  if (t == CUDA_R_32F) return {};
  const Format& f = t == CUDA_R_16BF ? Format::BF16() : Format::FP16();
  for (size_t i = 0; i < v.size(); ++i)
    if (static_cast<float>(f.decode(f.encode(v[i], EncodeOptions{}))) != v[i] && !std::isnan(v[i]))
      return std::string("the epilogue's ") + what + " value " + std::to_string(v[i]) + " (element " +
             std::to_string(i) + ") is not a " + typeName(t) + " number, the type cuBLASLt takes it in here";
  return {};
}

float bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// How one GEMM maps onto cuBLASLt (modes after promotion, padded sizes, the Lt problem).
struct Plan {
  ModePair pair;
  PaddedShape shape;
  LtProblem problem;
};

/// Requires cudaUnsupportedReason(a, b, opt, ...) to be empty.
Plan makePlan(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  Plan pl;
  pl.pair = choosePairing(*nativeScaleMode(a, Operand::A), *nativeScaleMode(b, Operand::B));
  pl.shape = padShape(a.rows, b.cols, a.cols, isBlockMode(pl.pair.a) || isBlockMode(pl.pair.b));
  LtProblem& p = pl.problem;
  p.m = pl.shape.np; // swapped: Lt-A = caller B^T, Lt-B = caller A
  p.n = pl.shape.mp;
  p.k = pl.shape.kp;
  p.a_type = *ltTypeOf(b.format);
  p.b_type = *ltTypeOf(a.format);
  p.d_type = *outputType(opt.output);
  p.a_mode = pl.pair.b;
  p.b_mode = pl.pair.a;
  p.fast_accum = opt.accumulation == Accumulation::FastAccum;
  p.alpha = opt.alpha;
  p.beta = opt.beta;
  p.bias = opt.bias != nullptr;
  return pl;
}

class CudaGemmBackend final : public GemmBackend {
public:
  explicit CudaGemmBackend(ProbeResult probe) : probe_(std::move(probe)), runner_(), stream_() {
    const DeviceInfo& d = probe_.devices.front();
    device_ = probe_.summary() + "; " + versionsSummary(probe_);
    cc_ = d.cc_major * 10 + d.cc_minor;
  }

  std::string name() const override { return "cuda"; }
  std::string device() const override { return device_; }

  /// The static rules (cudaUnsupportedReason), then what this GPU's cuBLASLt heuristic says
  /// about the exact problem (no kernel runs; answers are cached per problem).
  std::string unsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b,
                                const GemmOptions& opt) const override {
    std::string why = cudaUnsupportedReason(a, b, opt, cc_, probe_.cublaslt_version);
    if (!why.empty() || a.cols != b.rows || a.rows < 1 || a.cols < 1 || b.cols < 1) return why;
    try {
      const Plan pl = makePlan(a, b, opt);
      const std::string key = describeProblem(pl.problem);
      if (auto it = heuristic_cache_.find(key); it != heuristic_cache_.end()) return it->second;
      std::string r = checkLtProblem(pl.problem);
      if (r.empty()) {
        // Device memory: operands, scales, D (+ a BF16 C for FP8 D) and the workspace.
        const LtProblem& p = pl.problem;
        const double need = static_cast<double>(p.m * p.k + p.n * p.k) +
                            static_cast<double>(p.m * p.n) * (elementBytes(p.d_type) + (p.fp8Output() ? 2 : 0)) +
                            4.0 * static_cast<double>(ltScaleCount(LtScaleMode::Vec128, p.m + p.n, p.k)) +
                            static_cast<double>(kWorkspaceBytes);
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && need > 0.95 * static_cast<double>(free_b)) {
          heuristic_cache_.erase(key);
          return "the GEMM needs about " + std::to_string(static_cast<long long>(need / (1 << 20))) +
                 " MiB of GPU memory, " + std::to_string(free_b >> 20) + " MiB are free";
        }
      }
      if (r.empty()) {
        if (!dummy_) dummy_ = std::make_unique<DeviceBuffer<float>>(64);
        LtPointers ptr;
        ptr.a_scale = ptr.b_scale = ptr.d_scale = dummy_->get();
        ptr.amax_d = dummy_->get();
        const LtOperation op(pl.problem, ptr);
        std::string failure;
        if (runner().heuristics(op, 1, &failure).empty())
          r = "this GPU's cuBLASLt has no algorithm for " + key + " (" + failure + ")";
      }
      heuristic_cache_[key] = r;
      return r;
    } catch (const std::exception& e) {
      return std::string("cuBLASLt set-up failed: ") + e.what();
    }
  }

  GemmOutput run(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt,
                 const ProgressFn& progress) override {
    if (a.cols != b.rows)
      throw std::invalid_argument("GEMM shapes do not match: A is " + std::to_string(a.rows) + "x" +
                                  std::to_string(a.cols) + ", B is " + std::to_string(b.rows) + "x" +
                                  std::to_string(b.cols));
    if (a.rows < 1 || a.cols < 1 || b.cols < 1) throw std::invalid_argument("GEMM with an empty operand");
    checkOutputScale(opt);
    checkEpilogue(opt, a.rows, b.cols);
    const std::string why = unsupportedReason(a, b, opt);
    if (!why.empty()) throw std::runtime_error("the CUDA backend cannot run this GEMM: " + why);
    reportProgress(progress, 0.0, "arranging operands for cuBLASLt");

    const int64_t M = a.rows, K = a.cols, N = b.cols;
    const Plan plan = makePlan(a, b, opt);
    const ModePair& pair = plan.pair;
    const PaddedShape& ps = plan.shape;
    const LtProblem& p = plan.problem;
    const std::vector<uint8_t> lt_b_codes = packKMajor(a, Operand::A, ps.mp, ps.kp); // caller A → Lt-B
    const std::vector<uint8_t> lt_a_codes = packKMajor(b, Operand::B, ps.np, ps.kp); // caller B → Lt-A
    const std::vector<float> lt_b_scale = ltScaleTensor(a, Operand::A, pair.a, ps.mp, ps.kp);
    const std::vector<float> lt_a_scale = ltScaleTensor(b, Operand::B, pair.b, ps.np, ps.kp);

    reportProgress(progress, 0.2, "uploading to the GPU");
    cudaStream_t s = stream_.get();
    DeviceBuffer<uint8_t> da(lt_a_codes.size()), db(lt_b_codes.size());
    DeviceBuffer<float> dsa(lt_a_scale.size()), dsb(lt_b_scale.size()), dscale_d(1), damax(1);
    const size_t d_elems = static_cast<size_t>(p.m * p.n);
    DeviceBuffer<uint8_t> dd(d_elems * elementBytes(p.d_type));
    DeviceBuffer<uint8_t> dc(p.fp8Output() ? d_elems * 2 : 0);
    da.upload(lt_a_codes.data(), lt_a_codes.size(), s);
    db.upload(lt_b_codes.data(), lt_b_codes.size(), s);
    dsa.upload(lt_a_scale.data(), lt_a_scale.size(), s);
    dsb.upload(lt_b_scale.data(), lt_b_scale.size(), s);
    const float scale_d = opt.output_quant_scale;
    dscale_d.upload(&scale_d, 1, s);
    damax.zero(s);
    if (p.fp8Output()) dc.zero(s);

    LtPointers ptr;
    ptr.a = da.get();
    ptr.b = db.get();
    ptr.d = dd.get();
    ptr.c = p.fp8Output() ? static_cast<const void*>(dc.get()) : static_cast<const void*>(dd.get());
    ptr.a_scale = dsa.get();
    ptr.b_scale = dsb.get();
    ptr.d_scale = dscale_d.get();
    ptr.amax_d = damax.get();
    // The epilogue inputs in cuBLASLt's types and layout (unsupportedReason checked that every
    // value converts exactly): C [M,N] row-major = Lt column-major Np×Mp with ld Np, zero padded;
    // the caller's bias per column j = Lt's bias per row.
    DeviceBuffer<uint8_t> dcin(opt.beta != 0.0f ? d_elems * elementBytes(p.cType()) : 0);
    DeviceBuffer<uint8_t> dbias(p.bias ? static_cast<size_t>(p.m) * 2 : 0);
    if (opt.beta != 0.0f) {
      std::vector<uint8_t> hc(dcin.bytes(), 0);
      const size_t eb = elementBytes(p.cType());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          storeAs(p.cType(), (*opt.c)[static_cast<size_t>(i * N + j)],
                  hc.data() + static_cast<size_t>(i * p.m + j) * eb);
      dcin.upload(hc.data(), hc.size(), s);
    }
    if (p.bias) {
      std::vector<uint8_t> hb(dbias.bytes(), 0);
      for (int64_t j = 0; j < N; ++j) storeAs(p.biasType(), (*opt.bias)[static_cast<size_t>(j)], hb.data() + j * 2);
      dbias.upload(hb.data(), hb.size(), s);
      ptr.bias = dbias.get();
    }
    if (opt.beta != 0.0f) ptr.c = dcin.get();
    const LtOperation op(p, ptr);

    reportProgress(progress, 0.4, "cuBLASLt FP8 GEMM");
    Event start, stop;
    // start is recorded inside runWithFallback, after the host-side heuristic query: recorded
    // here, the GPU's idle wait for that query would count as GEMM time.
    const LtAlgoInfo algo = runner().runWithFallback(op, ptr, s, 8, start.get());
    stop.record(s);
    const float ms = stop.elapsedSince(start);

    std::vector<uint8_t> d_raw(dd.bytes());
    dd.download(d_raw.data(), d_raw.size(), s);
    float amax = 0;
    damax.download(&amax, 1, s);
    stream_.synchronize();
    reportProgress(progress, 0.9, "reading the result");

    GemmOutput out;
    out.m = M;
    out.n = N;
    out.d.resize(static_cast<size_t>(M * N));
    // Lt-D is column-major Np×Mp = row-major [Mp, Np]: element (i, j) at i·Np + j.
    const int64_t ld = p.m;
    if (p.fp8Output()) {
      const Format& f = opt.output == OutputType::E4M3FN ? Format::E4M3FN() : Format::E5M2();
      const std::vector<float>& table = f.decodeTable();
      const double inv = 1.0 / static_cast<double>(scale_d); // as the CPU backend: decode · (1/scale_D)
      out.d_codes.resize(out.d.size());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const uint8_t c = d_raw[static_cast<size_t>(i * ld + j)];
          out.d_codes[static_cast<size_t>(i * N + j)] = c;
          out.d[static_cast<size_t>(i * N + j)] = static_cast<float>(static_cast<double>(table[c]) * inv);
        }
      out.amax_d = amax;
    } else {
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          const size_t src = static_cast<size_t>(i * ld + j);
          float v = 0;
          if (p.d_type == CUDA_R_32F) {
            std::memcpy(&v, d_raw.data() + src * 4, 4);
          } else {
            uint16_t h;
            std::memcpy(&h, d_raw.data() + src * 2, 2);
            v = p.d_type == CUDA_R_16BF ? bf16ToFloat(h) : static_cast<float>(Format::FP16().decode(h));
          }
          out.d[static_cast<size_t>(i * N + j)] = v;
        }
      // cuBLASLt computes AMAX_D only for FP8 outputs: the host takes it here, from D after the
      // output cast (exact for FP32 D; for BF16/FP16 it is max|D| rounded to that type, where the
      // CPU backend reports the value before the cast). A NaN in D makes amax_D NaN, as the CPU
      // backend's convertOutput does (gemm.h: NaN propagates).
      float m = 0;
      bool nan = false;
      for (float v : out.d) {
        if (std::isnan(v))
          nan = true;
        else
          m = std::max(m, std::fabs(v));
      }
      out.amax_d = nan ? std::numeric_limits<float>::quiet_NaN() : m;
    }
    out.seconds = ms * 1e-3;
    out.backend = "cuda";
    out.device = device_;
    out.algorithm = algo.describe() + "; " + describeProblem(p) + " (cuBLASLt operands swapped: Lt-A = B^T, Lt-B = A)";
    if (!pair.note.empty()) out.warnings.push_back({Severity::Info, "scale modes promoted", "cuBLASLt", pair.note});
    if (opt.accumulation == Accumulation::SplitFP32 && opt.promotion_interval != 128)
      out.warnings.push_back({Severity::Warning, "promotion interval", "cuBLASLt",
                              "cuBLASLt's promotion interval is fixed by the library (undocumented; 128 of K assumed); "
                              "the requested " +
                                  std::to_string(opt.promotion_interval) + " is ignored"});
    if (ps.mp != M || ps.np != N || ps.kp != K)
      out.warnings.push_back({Severity::Info, "padded", "cuBLASLt",
                              "M, N, K padded with zeros to " + std::to_string(ps.mp) + ", " + std::to_string(ps.np) +
                                  ", " + std::to_string(ps.kp)});
    reportProgress(progress, 1.0, "done");
    return out;
  }

private:
  LtRunner& runner() const {
    if (!runner_) runner_ = std::make_unique<LtRunner>();
    return *runner_;
  }
  ProbeResult probe_;
  mutable std::unique_ptr<LtRunner> runner_;
  mutable std::unique_ptr<DeviceBuffer<float>> dummy_;
  mutable std::map<std::string, std::string> heuristic_cache_;
  Stream stream_;
  std::string device_;
  int cc_ = 0;
};

} // namespace

std::string cudaUnsupportedReason(const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt, int cc_,
                                  size_t cublaslt_version) {
  for (const auto* t : {&a, &b})
    if (t->format == &Format::E2M1() && t->scale_format == &Format::E4M3FN())
      return std::string("operand ") + (t == &a ? "A" : "B") +
             " is NVFP4 (E2M1 with E4M3 block scales, cuBLASLt VEC16_UE4M3), which cuBLASLt runs on Blackwell "
             "(sm_100) only, not on Hopper; the CPU reference runs it";
  const auto ta = ltTypeOf(a.format), tb = ltTypeOf(b.format);
  if (!ta) return formatReason(a.format, "A");
  if (!tb) return formatReason(b.format, "B");
  if (*ta == CUDA_R_8F_E5M2 && *tb == CUDA_R_8F_E5M2)
    return "E5M2 x E5M2 is not supported by cuBLASLt (one operand must be E4M3FN)";
  if (cc_ < 89) return "this GPU (sm_" + std::to_string(cc_) + ") has no FP8 tensor cores (sm_89 or newer needed)";
  std::string why;
  const auto ma = nativeScaleMode(a, Operand::A, &why);
  if (!ma) return why;
  const auto mb = nativeScaleMode(b, Operand::B, &why);
  if (!mb) return why;
  const ModePair pair = choosePairing(*ma, *mb);
  const bool non_scalar = pair.a != LtScaleMode::Scalar || pair.b != LtScaleMode::Scalar;
  if (non_scalar && cc_ != 90)
    return std::string("per-row/column and 1x128/128x128 scale modes (") + toString(pair.a) + " x " + toString(pair.b) +
           ") are supported by cuBLASLt on Hopper (sm_90) only; this GPU is sm_" + std::to_string(cc_);
  if (non_scalar && cublaslt_version < 120900)
    return "cuBLASLt " + std::to_string(cublaslt_version) +
           " predates 12.9, which added outer-vector and block scale modes";
  bool acc_ok = false; // stays false for models added to core/gemm later: CPU-only until mapped here
  switch (opt.accumulation) {
  case Accumulation::SplitFP32:
    acc_ok = true;
    break;
  case Accumulation::FastAccum:
    if (opt.fast_accum_promotes)
      return "the FastAccum model with per-window promotion is a CPU model; on the GPU choose SplitFP32 "
             "(FAST_ACCUM=0) or FastAccum without promotion (FAST_ACCUM=1)";
    acc_ok = true;
    break;
  case Accumulation::Exact:
    return "exact (double) accumulation is a CPU reference model";
  case Accumulation::FP32:
    return "sequential FP32 accumulation is a CPU reference model";
  }
  if (!acc_ok) return std::string("the accumulation model ") + toString(opt.accumulation) + " is CPU-only";
  if (opt.output == OutputType::E5M2 && *ta == CUDA_R_8F_E4M3 && *tb == CUDA_R_8F_E4M3)
    return "E4M3 x E4M3 -> E5M2 output is not supported by cuBLASLt";
  if (opt.bias && opt.output == OutputType::FP32)
    return "a bias with an FP32 output: cuBLASLt's FP8 GEMMs take a 16-bit bias, and PyTorch refuses a bias with FP32 "
           "output for this reason; the CPU reference adds the float32 bias";
  {
    LtProblem q;
    q.d_type = *outputType(opt.output);
    if (opt.beta != 0.0f && opt.c)
      if (std::string w = notExactIn(q.cType(), *opt.c, "C"); !w.empty()) return w;
    if (opt.bias)
      if (std::string w = notExactIn(q.biasType(), *opt.bias, "bias"); !w.empty()) return w;
  }
  if (a.cols != b.rows) return {}; // run() reports the shape error
  return {};
}

std::string versionsSummary(const ProbeResult& p) {
  auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  const size_t lt = p.cublaslt_version;
  return "CUDA runtime " + ver(p.runtime_version) + ", driver " + (p.driver_version ? ver(p.driver_version) : "none") +
         ", cuBLASLt " + std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." +
         std::to_string(lt % 100);
}

std::unique_ptr<GemmBackend> makeCudaGemmBackend(std::string* why) {
  ProbeResult probe = probeDevices();
  if (!probe.hasDevice()) {
    if (why) *why = "no CUDA device (" + probe.reason + ")";
    return nullptr;
  }
  const DeviceInfo& d = probe.devices.front();
  if (d.cc_major * 10 + d.cc_minor < 89) {
    if (why)
      *why = d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) +
             ") has no FP8 tensor cores; FP8 GEMMs need sm_89 or newer (sm_90 for every scale mode)";
    return nullptr;
  }
  try {
    FP8LAB_CUDA_CHECK(cudaSetDevice(d.index));
    return std::make_unique<CudaGemmBackend>(std::move(probe));
  } catch (const std::exception& e) {
    if (why) *why = std::string("the CUDA backend could not start: ") + e.what();
    return nullptr;
  }
}

} // namespace fp8lab::gpu
