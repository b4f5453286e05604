// FP8 Lab — the transformer probes of the outlier and low-precision literature, as pure
// functions of a tensor. Each states the formula it implements and where it comes from
// (docs/training.md "Probes" repeats them with the session names).
#pragma once

#include "formats/format.h"

#include <cstdint>
#include <vector>

namespace fp8lab {

/// Outlier-feature statistics of a hidden state X [n, d] (n tokens, width d), as He, Noci,
/// Paliotta, Schlag & Hofmann 2024 ("Understanding and Minimising Outlier Features in Transformer
/// Training", arXiv 2405.19279) log them (bobby-he/simplified_transformers, train_utils.py,
/// report_outliers):
///   x̃ = X − mean over the width (each token centred);  r = √(mean of x̃²) + 1e-8;
///   m_j = (1/n) Σ_t (x̃_tj / r)²  (the per-channel mean squares, whose mean is ≈ 1);
///   kurtosis      = Σ_j (m_j − mean(m))² / (d − 1)  (torch.var, unbiased): 0 when every channel
///                   carries the same energy, large when a few carry most of it;
///   max_median    = mean over tokens of max_j |x̃_tj| / median_j |x̃_tj| (torch.median: the lower
///                   middle value for even d).
/// Sums in double.
struct OutlierStats {
  double kurtosis = 0;
  double max_median = 0;
  double rms = 0; ///< r (without the 1e-8)
};
OutlierStats outlierStats(const float* x, int64_t n, int64_t d);

/// Massive activations (Sun, Chen, Kolter & Liu 2024, "Massive Activations in Large Language
/// Models", arXiv 2402.17762): elements of X [n, d] with |x| > `abs_threshold` (100 in the paper;
/// a parameter for small models) and |x| ≥ `ratio` (1000 in the paper) × the median |x| of their
/// own hidden state (token row; lower middle for even d). Returns the count.
int64_t massiveActivations(const float* x, int64_t n, int64_t d, double abs_threshold, double ratio = 1000.0);

/// The attention sink (Xiao et al. 2023, StreamingLLM, arXiv 2309.17453; Guo et al. 2024,
/// arXiv 2410.13835): the mean, over batches and query positions t ≥ 1, of the probability a head
/// puts on key position 0. probs [B, H, T, T] as layers.h attentionForward stores them; returns
/// one value per head [H]. A uniform causal head gives mean_{t=1..T−1} 1/(t+1).
std::vector<double> attentionSink(const float* probs, int64_t batch, int64_t heads, int64_t t);

/// Softmax cast underflow (FP8 attention with sinks, arXiv 2606.06521): the share of the non-zero
/// probabilities of probs [n] that a cast to `format` with quant multiplier `scale` (p ↦
/// encode(p·scale)) flushes to zero. Returns 0 when no probability is non-zero.
double softmaxCastUnderflow(const float* probs, int64_t n, const Format& format, float scale);

/// Gradient underflow (Transformer Engine debug features, LogFp8TensorStats "underflows%"): the
/// share of the non-zero elements of g [n] that quantize to zero with `format` and quant
/// multiplier `scale` (round to nearest even, saturating).
double quantizationUnderflow(const float* g, int64_t n, const Format& format, float scale);

/// Gradient-to-quantization-noise ratio ("FP4 All the Way", arXiv 2505.19115): ‖g‖₂ / ‖Q(g) − g‖₂
/// with Q(g) = dequantized [n] the operand as the GEMM used it. +Inf when Q(g) = g exactly; the
/// paper finds training stops making progress when it falls below about √3.
double gradientNoiseRatio(const float* g, const float* dequantized, int64_t n);

} // namespace fp8lab
