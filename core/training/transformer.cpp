// FP8 Lab — the tiny transformer language model (see transformer.h).
#include "training/transformer.h"

#include "training/random.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fp8lab {

const char* toString(FfnKind k) {
  return k == FfnKind::Swiglu ? "swiglu" : "gelu";
}

const char* toString(NormKind k) {
  return k == NormKind::RmsNorm ? "rmsnorm" : "layernorm";
}

std::string TransformerConfig::validate() const {
  auto range = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  if (!range(vocab, 2, 65536)) return "vocab must be in 2..65536";
  if (!range(d_model, 1, 4096)) return "d_model must be in 1..4096";
  if (!range(layers, 1, 64)) return "layers must be in 1..64";
  if (!range(heads, 1, 256)) return "heads must be in 1..256";
  if (d_model % heads != 0)
    return "d_model (" + std::to_string(d_model) + ") must be a multiple of heads (" + std::to_string(heads) + ")";
  if (!range(context, 2, 4096)) return "context must be in 2..4096";
  if (!range(ffn_hidden, 1, 16384)) return "ffn_hidden must be in 1..16384";
  if (!(norm_eps > 0 && norm_eps < 1)) return "norm_eps must be in (0, 1)";
  return {};
}

SiteTable TransformerConfig::sites() const {
  std::vector<Site> s;
  const int64_t hs = heads > 0 ? d_model / heads : 0;
  auto add = [&](std::string path, SiteKind k, int64_t in, int64_t out, int block, std::string group) {
    s.push_back(Site{std::move(path), k, in, out, block, std::move(group)});
  };
  for (int64_t l = 0; l < layers; ++l) {
    const std::string b = blockName(l) + ".";
    const int bl = int(l);
    add(b + "attn.qkv", SiteKind::Linear, d_model, 3 * d_model, bl, "attn");
    add(b + "attn.scores", SiteKind::AttentionScores, hs, context, bl, "attn");
    add(b + "attn.context", SiteKind::AttentionContext, context, hs, bl, "attn");
    add(b + "attn.out", SiteKind::Linear, d_model, d_model, bl, "attn");
    add(b + "ffn.up", SiteKind::Linear, d_model, ffn_hidden, bl, "ffn");
    if (ffn == FfnKind::Swiglu) add(b + "ffn.gate", SiteKind::Linear, d_model, ffn_hidden, bl, "ffn");
    add(b + "ffn.down", SiteKind::Linear, ffn_hidden, d_model, bl, "ffn");
  }
  add(kLmHeadName, SiteKind::Linear, d_model, vocab, -1, "head");
  return SiteTable(std::move(s));
}

int64_t TransformerConfig::parameterCount() const {
  const int64_t C = d_model, F = ffn_hidden;
  const int64_t norm_params = norm == NormKind::LayerNorm ? 2 * C : C;
  const int64_t bias = linear_bias ? 1 : 0;
  int64_t per_block = 2 * norm_params + C * 3 * C + C * C + C * F + F * C + bias * (3 * C + C + F + C);
  if (ffn == FfnKind::Swiglu) per_block += C * F + bias * F;
  int64_t n = vocab * C + (position_embedding ? context * C : 0) + layers * per_block;
  if (pre_norm) n += norm_params;
  if (!tied_embeddings) n += C * vocab;
  return n;
}

// ---- the model ------------------------------------------------------------------------------

template <class T> struct TransformerModel<T>::Impl {
  TransformerConfig cfg;
  std::vector<Param<T>> params;
  struct BlockParams {
    int ln1_w = -1, ln1_b = -1, qkv_w = -1, qkv_b = -1, out_w = -1, out_b = -1, ln2_w = -1, ln2_b = -1;
    int up_w = -1, up_b = -1, gate_w = -1, gate_b = -1, down_w = -1, down_b = -1;
  };
  std::vector<BlockParams> bp;
  int wte = -1, wpe = -1, lnf_w = -1, lnf_b = -1, lm_w = -1;
  struct BlockSites {
    size_t qkv = 0, scores = 0, context = 0, out = 0, up = 0, gate = 0, down = 0;
  };
  std::vector<BlockSites> bs;
  size_t lm_site = 0;

  // activations of the last forward
  struct BlockActs {
    std::vector<T> x_in, n1, n1_mean, n1_rstd, qkv, qkv_used, probs, att, proj, s1, x_mid, n2, n2_mean, n2_rstd;
    std::vector<T> up, gate, act, down, s2, x_out, gelu_tanh;
  };
  std::vector<BlockActs> acts;
  std::vector<T> x0, lnf, lnf_mean, lnf_rstd, logits, w_lm_t;
  std::vector<T> dlogits; ///< the loss gradient of the last forward, for `dlogits_count` positions
  int64_t dlogits_count = 0;
  std::vector<int32_t> tokens, targets;
  /// Scratch of forward() and backward(), kept between steps so that a step allocates nothing.
  struct Scratch {
    std::vector<T> part, gw, head_gw, dcur, tmp, ds2, dact, dup, dgate, dffn_in, dg_in, ds1, datt, dqkv, dn1;
  } sc;
  int64_t B = 0, Tn = 0;
  bool have_targets = false;
  int threads = 1;

  int add(std::string name, std::vector<int64_t> shape, bool decay) {
    Param<T> p;
    p.name = std::move(name);
    p.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t s : p.shape) n *= s;
    p.value.assign(static_cast<size_t>(n), T(0));
    p.grad.assign(static_cast<size_t>(n), T(0));
    p.m.assign(static_cast<size_t>(n), T(0));
    p.v.assign(static_cast<size_t>(n), T(0));
    p.decay = decay;
    params.push_back(std::move(p));
    return int(params.size()) - 1;
  }
  std::vector<T>& val(int i) { return params[size_t(i)].value; }
  std::vector<T>& grd(int i) { return params[size_t(i)].grad; }

  void build(uint64_t seed) {
    const int64_t C = cfg.d_model, F = cfg.ffn_hidden, V = cfg.vocab, Tc = cfg.context;
    const bool ln = cfg.norm == NormKind::LayerNorm;
    // A Linear's bias [n], or none (−1) without biases.
    const auto linearBias = [&](const std::string& name, int64_t n) {
      return cfg.linear_bias ? add(name, {n}, false) : -1;
    };
    wte = add("wte.weight", {V, C}, true);
    if (cfg.position_embedding) wpe = add("wpe.weight", {Tc, C}, true);
    for (int64_t l = 0; l < cfg.layers; ++l) {
      const std::string b = blockName(l) + ".";
      BlockParams p;
      p.ln1_w = add(b + "ln1.weight", {C}, false);
      if (ln) p.ln1_b = add(b + "ln1.bias", {C}, false);
      p.qkv_w = add(b + "attn.qkv.weight", {C, 3 * C}, true);
      p.qkv_b = linearBias(b + "attn.qkv.bias", 3 * C);
      p.out_w = add(b + "attn.out.weight", {C, C}, true);
      p.out_b = linearBias(b + "attn.out.bias", C);
      p.ln2_w = add(b + "ln2.weight", {C}, false);
      if (ln) p.ln2_b = add(b + "ln2.bias", {C}, false);
      p.up_w = add(b + "ffn.up.weight", {C, F}, true);
      p.up_b = linearBias(b + "ffn.up.bias", F);
      if (cfg.ffn == FfnKind::Swiglu) {
        p.gate_w = add(b + "ffn.gate.weight", {C, F}, true);
        p.gate_b = linearBias(b + "ffn.gate.bias", F);
      }
      p.down_w = add(b + "ffn.down.weight", {F, C}, true);
      p.down_b = linearBias(b + "ffn.down.bias", C);
      bp.push_back(p);
    }
    if (cfg.pre_norm) {
      lnf_w = add("ln_f.weight", {C}, false);
      if (ln) lnf_b = add("ln_f.bias", {C}, false);
    }
    if (!cfg.tied_embeddings) lm_w = add(std::string(kLmHeadName) + ".weight", {C, V}, true);
    // GPT-2 initialisation, in parameter order from one stream.
    TrainingRng rng(seed);
    const double resid = 0.02 / std::sqrt(2.0 * double(cfg.layers));
    for (Param<T>& p : params) {
      const std::string& n = p.name;
      const bool gain = n.find("ln") != std::string::npos && n.ends_with(".weight");
      const bool bias = n.ends_with(".bias");
      if (gain) {
        std::fill(p.value.begin(), p.value.end(), T(1));
      } else if (bias) {
        std::fill(p.value.begin(), p.value.end(), T(0));
      } else {
        const bool residual = n.ends_with("attn.out.weight") || n.ends_with("ffn.down.weight");
        const double sd = residual ? resid : 0.02;
        for (T& v : p.value) v = T(double(rng.normal()) * sd);
      }
    }
    // sites
    const SiteTable t = cfg.sites();
    for (int64_t l = 0; l < cfg.layers; ++l) {
      const std::string b = blockName(l) + ".";
      BlockSites s;
      s.qkv = size_t(t.find(b + "attn.qkv"));
      s.scores = size_t(t.find(b + "attn.scores"));
      s.context = size_t(t.find(b + "attn.context"));
      s.out = size_t(t.find(b + "attn.out"));
      s.up = size_t(t.find(b + "ffn.up"));
      if (cfg.ffn == FfnKind::Swiglu) s.gate = size_t(t.find(b + "ffn.gate"));
      s.down = size_t(t.find(b + "ffn.down"));
      bs.push_back(s);
    }
    lm_site = size_t(t.find(kLmHeadName));
    acts.resize(size_t(cfg.layers));
  }

  void normForward(const T* x, int wg, int wb, std::vector<T>& y, std::vector<T>& mean, std::vector<T>& rstd,
                   int64_t n) {
    const int64_t C = cfg.d_model;
    y.resize(static_cast<size_t>(n * C));
    rstd.resize(static_cast<size_t>(n));
    if (cfg.norm == NormKind::LayerNorm) {
      mean.resize(static_cast<size_t>(n));
      nn::layerNormForward(x, val(wg).data(), val(wb).data(), y.data(), mean.data(), rstd.data(), n, C, cfg.norm_eps,
                           threads);
    } else {
      nn::rmsNormForward(x, val(wg).data(), y.data(), rstd.data(), n, C, cfg.norm_eps, threads);
    }
  }

  /// dx (written) of a norm from dy, its input x and saved statistics; the gains' gradients added.
  void normBackward(const T* dy, const T* x, int wg, int wb, const std::vector<T>& mean, const std::vector<T>& rstd,
                    std::vector<T>& dx, int64_t n) {
    const int64_t C = cfg.d_model;
    dx.resize(static_cast<size_t>(n * C));
    if (cfg.norm == NormKind::LayerNorm)
      nn::layerNormBackward(dy, x, val(wg).data(), mean.data(), rstd.data(), dx.data(), grd(wg).data(), grd(wb).data(),
                            n, C, threads);
    else
      nn::rmsNormBackward(dy, x, val(wg).data(), rstd.data(), dx.data(), grd(wg).data(), n, C, threads);
  }

  /// Linear with bias: y = x·W + b through site `site`.
  void linear(LinearOps<T>& ops, size_t site, const T* x, int64_t n, int w, int b, int64_t in, int64_t out,
              std::vector<T>& y) {
    ops.linearForward(site, x, n, val(w).data(), in, out, y);
    if (b >= 0) nn::biasForward(y.data(), val(b).data(), n, out, threads);
  }

  /// Backward of linear(): W's (and b's) gradients added; dx written when not null.
  void linearBack(LinearOps<T>& ops, size_t site, const T* g, int64_t n, int w, int b, int64_t out,
                  std::vector<T>* dx) {
    if (b >= 0) nn::biasBackward(g, grd(b).data(), n, out, threads);
    std::vector<T>& gw = sc.gw;
    ops.linearBackward(site, g, gw, dx);
    std::vector<T>& G = grd(w);
    for (size_t i = 0; i < G.size(); ++i) G[i] += gw[i];
  }

  /// Copies one third of qkv [n, 3C] (part 0: Q, 1: K, 2: V) into out [n, C], or back.
  void gather(const std::vector<T>& qkv, int part, std::vector<T>& out, int64_t n) {
    const int64_t C = cfg.d_model;
    out.resize(static_cast<size_t>(n * C));
    for (int64_t i = 0; i < n; ++i) std::copy_n(qkv.begin() + i * 3 * C + part * C, C, out.begin() + i * C);
  }
  void scatter(const std::vector<T>& in, int part, std::vector<T>& qkv, int64_t n) {
    const int64_t C = cfg.d_model;
    for (int64_t i = 0; i < n; ++i) std::copy_n(in.begin() + i * C, C, qkv.begin() + i * 3 * C + part * C);
  }

  void attention(LinearOps<T>& ops, BlockActs& a, const BlockSites& s, int64_t n) {
    const int64_t C = cfg.d_model, H = cfg.heads;
    a.qkv_used = a.qkv;
    const bool low_s = ops.attentionLow(s.scores), low_c = ops.attentionLow(s.context);
    std::vector<T>& part = sc.part;
    for (int k = 0; k < 3; ++k) {
      const size_t site = k < 2 ? s.scores : s.context;
      const SiteOperand op = k == 0 ? SiteOperand::Input : SiteOperand::Kernel;
      gather(a.qkv, k, part, n);
      if ((k < 2 && low_s) || (k == 2 && low_c)) {
        ops.quantize(site, op, part.data(), int64_t(part.size()));
        scatter(part, k, a.qkv_used, n);
      }
      ops.observe(site, op, part.data(), int64_t(part.size()));
    }
    a.att.resize(static_cast<size_t>(n * C));
    a.probs.resize(static_cast<size_t>(B * H * Tn * Tn));
    std::function<void(T*, int64_t)> cast;
    if (low_c) cast = [&ops, &s](T* row, int64_t len) { ops.quantize(s.context, SiteOperand::Input, row, len); };
    nn::attentionForward(a.qkv_used.data(), a.att.data(), a.probs.data(), B, Tn, C, H, cast, threads);
    ops.observe(s.context, SiteOperand::Input, a.probs.data(), int64_t(a.probs.size()));
  }

  double forward(const int32_t* tok, const int32_t* tgt, int64_t batch, int64_t t, LinearOps<T>& ops,
                 std::vector<T>* out_logits) {
    const int64_t C = cfg.d_model, F = cfg.ffn_hidden, V = cfg.vocab;
    if (t < 1 || t > cfg.context) throw std::invalid_argument("sequence length outside 1..context");
    B = batch;
    Tn = t;
    const int64_t n = B * Tn;
    tokens.assign(tok, tok + n);
    for (int32_t v : tokens)
      if (v < 0 || v >= V) throw std::invalid_argument("token id outside the vocabulary");
    have_targets = tgt != nullptr;
    if (tgt) targets.assign(tgt, tgt + n);
    x0.resize(static_cast<size_t>(n * C));
    nn::embeddingForward(tokens.data(), val(wte).data(), wpe >= 0 ? val(wpe).data() : static_cast<const T*>(nullptr),
                         x0.data(), B, Tn, C);
    ops.check("embedding", "embedding", x0.data(), n, C);
    const std::vector<T>* cur = &x0;
    for (size_t l = 0; l < acts.size(); ++l) {
      BlockActs& a = acts[l];
      const BlockParams& p = bp[l];
      const BlockSites& s = bs[l];
      a.x_in = *cur;
      if (cfg.pre_norm) {
        normForward(a.x_in.data(), p.ln1_w, p.ln1_b, a.n1, a.n1_mean, a.n1_rstd, n);
        linear(ops, s.qkv, a.n1.data(), n, p.qkv_w, p.qkv_b, C, 3 * C, a.qkv);
      } else {
        linear(ops, s.qkv, a.x_in.data(), n, p.qkv_w, p.qkv_b, C, 3 * C, a.qkv);
      }
      const std::string bname = blockName(l);
      if (cfg.pre_norm) ops.check(bname, "ln1", a.n1.data(), n, C);
      attention(ops, a, s, n);
      ops.check(bname, "attention", a.att.data(), n, C);
      linear(ops, s.out, a.att.data(), n, p.out_w, p.out_b, C, C, a.proj);
      a.s1.resize(static_cast<size_t>(n * C));
      nn::residualForward(a.x_in.data(), a.proj.data(), a.s1.data(), n * C, threads);
      const T* ffn_in;
      if (cfg.pre_norm) {
        a.x_mid = a.s1;
        normForward(a.x_mid.data(), p.ln2_w, p.ln2_b, a.n2, a.n2_mean, a.n2_rstd, n);
        ffn_in = a.n2.data();
      } else {
        normForward(a.s1.data(), p.ln1_w, p.ln1_b, a.x_mid, a.n1_mean, a.n1_rstd, n);
        ffn_in = a.x_mid.data();
      }
      linear(ops, s.up, ffn_in, n, p.up_w, p.up_b, C, F, a.up);
      a.act.resize(static_cast<size_t>(n * F));
      if (cfg.ffn == FfnKind::Swiglu) {
        linear(ops, s.gate, ffn_in, n, p.gate_w, p.gate_b, C, F, a.gate);
        nn::swigluForward(a.gate.data(), a.up.data(), a.act.data(), n * F, threads);
      } else {
        a.gelu_tanh.resize(static_cast<size_t>(n * F));
        nn::geluForward(a.up.data(), a.act.data(), n * F, a.gelu_tanh.data(), threads);
      }
      ops.check(bname, cfg.ffn == FfnKind::Swiglu ? "swiglu" : "gelu", a.act.data(), n, F);
      linear(ops, s.down, a.act.data(), n, p.down_w, p.down_b, F, C, a.down);
      a.s2.resize(static_cast<size_t>(n * C));
      nn::residualForward(a.x_mid.data(), a.down.data(), a.s2.data(), n * C, threads);
      if (cfg.pre_norm)
        a.x_out = a.s2;
      else
        normForward(a.s2.data(), p.ln2_w, p.ln2_b, a.x_out, a.n2_mean, a.n2_rstd, n);
      ops.check(bname, "residual", a.x_out.data(), n, C);
      cur = &a.x_out;
    }
    const T* head_in = cur->data();
    if (cfg.pre_norm) {
      normForward(cur->data(), lnf_w, lnf_b, lnf, lnf_mean, lnf_rstd, n);
      head_in = lnf.data();
    }
    const T* wl;
    if (cfg.tied_embeddings) {
      w_lm_t.resize(static_cast<size_t>(C * V));
      nn::transpose(val(wte).data(), w_lm_t.data(), V, C);
      wl = w_lm_t.data();
    } else {
      wl = val(lm_w).data();
    }
    ops.linearForward(lm_site, head_in, n, wl, C, V, logits);
    if (out_logits) *out_logits = logits;
    dlogits_count = 0;
    if (!tgt) return 0.0;
    // The loss and its gradient for the mean over the valid targets, in one pass (the backward of
    // that mean uses it as it is).
    int64_t valid = 0;
    for (int32_t v : targets) valid += v >= 0;
    dlogits.resize(static_cast<size_t>(n * V));
    dlogits_count = std::max<int64_t>(valid, 1);
    return nn::softmaxCrossEntropy<T>(logits.data(), targets.data(), n, V, dlogits.data(), dlogits_count, nullptr, 0.0,
                                      threads);
  }

  void backward(int64_t count, LinearOps<T>& ops) {
    if (!have_targets) throw std::logic_error("TransformerModel::backward without targets");
    const int64_t C = cfg.d_model, F = cfg.ffn_hidden, V = cfg.vocab, H = cfg.heads;
    const int64_t n = B * Tn;
    if (dlogits_count != std::max<int64_t>(count, 1)) {
      dlogits.resize(static_cast<size_t>(n * V));
      nn::softmaxCrossEntropy<T>(logits.data(), targets.data(), n, V, dlogits.data(), std::max<int64_t>(count, 1),
                                 nullptr, 0.0, threads);
    }
    std::vector<T>&dcur = sc.dcur, &gw = sc.head_gw, &tmp = sc.tmp;
    ops.linearBackward(lm_site, dlogits.data(), gw, &dcur);
    if (cfg.tied_embeddings) {
      std::vector<T>& g = sc.tmp;
      g.resize(static_cast<size_t>(V * C));
      nn::transpose(gw.data(), g.data(), C, V); // dW_lm [C, V] → dwte [V, C]
      std::vector<T>& G = grd(wte);
      for (size_t i = 0; i < G.size(); ++i) G[i] += g[i];
    } else {
      std::vector<T>& G = grd(lm_w);
      for (size_t i = 0; i < G.size(); ++i) G[i] += gw[i];
    }
    if (cfg.pre_norm) {
      const std::vector<T>& x_last = acts.empty() ? x0 : acts.back().x_out;
      normBackward(dcur.data(), x_last.data(), lnf_w, lnf_b, lnf_mean, lnf_rstd, tmp, n);
      dcur.swap(tmp);
    }
    // dcur, the gradient of the block's output, becomes the gradient of its input in place: pre-norm
    // blocks add each branch's input gradient to it (x_mid = x_in + attention, out = x_mid + FFN).
    for (size_t li = acts.size(); li-- > 0;) {
      BlockActs& a = acts[li];
      const BlockParams& p = bp[li];
      const BlockSites& s = bs[li];
      std::vector<T>&dact = sc.dact, &dup = sc.dup, &dgate = sc.dgate, &dffn_in = sc.dffn_in;
      // s2 = x_mid + down
      const std::vector<T>* ds2 = &dcur;
      if (!cfg.pre_norm) {
        normBackward(dcur.data(), a.s2.data(), p.ln2_w, p.ln2_b, a.n2_mean, a.n2_rstd, sc.ds2, n);
        ds2 = &sc.ds2;
      }
      linearBack(ops, s.down, ds2->data(), n, p.down_w, p.down_b, C, &dact);
      dup.resize(static_cast<size_t>(n * F));
      if (cfg.ffn == FfnKind::Swiglu) {
        dgate.resize(static_cast<size_t>(n * F));
        nn::swigluBackward(dact.data(), a.gate.data(), a.up.data(), dgate.data(), dup.data(), n * F, threads);
      } else {
        nn::geluBackward(dact.data(), a.up.data(), dup.data(), n * F, a.gelu_tanh.data(), threads);
      }
      linearBack(ops, s.up, dup.data(), n, p.up_w, p.up_b, F, &dffn_in);
      if (cfg.ffn == FfnKind::Swiglu) {
        linearBack(ops, s.gate, dgate.data(), n, p.gate_w, p.gate_b, F, &sc.dg_in);
        for (size_t i = 0; i < dffn_in.size(); ++i) dffn_in[i] += sc.dg_in[i];
      }
      // dx_mid = ds2 + the FFN branch's input gradient; pre-norm: accumulated in dcur (= ds2)
      const std::vector<T>* ds1 = &dcur;
      if (cfg.pre_norm) {
        normBackward(dffn_in.data(), a.x_mid.data(), p.ln2_w, p.ln2_b, a.n2_mean, a.n2_rstd, tmp, n);
        for (size_t i = 0; i < dcur.size(); ++i) dcur[i] += tmp[i];
      } else {
        std::vector<T>& dx_mid = sc.ds2;
        for (size_t i = 0; i < dx_mid.size(); ++i) dx_mid[i] += dffn_in[i];
        normBackward(dx_mid.data(), a.s1.data(), p.ln1_w, p.ln1_b, a.n1_mean, a.n1_rstd, sc.ds1, n);
        ds1 = &sc.ds1;
      }
      // s1 = x_in + proj
      std::vector<T>&datt = sc.datt, &dqkv = sc.dqkv, &dn1 = sc.dn1;
      dqkv.resize(static_cast<size_t>(n * 3 * C)); // every element written by attentionBackward
      linearBack(ops, s.out, ds1->data(), n, p.out_w, p.out_b, C, &datt);
      double ds_amax = 0;
      nn::attentionBackward(datt.data(), a.qkv_used.data(), a.probs.data(), dqkv.data(), B, Tn, C, H, &ds_amax,
                            threads);
      ops.observeAmax(s.scores, SiteOperand::OutputGrad, ds_amax);
      ops.observe(s.context, SiteOperand::OutputGrad, datt.data(), int64_t(datt.size()));
      linearBack(ops, s.qkv, dqkv.data(), n, p.qkv_w, p.qkv_b, 3 * C, &dn1);
      if (cfg.pre_norm) {
        normBackward(dn1.data(), a.x_in.data(), p.ln1_w, p.ln1_b, a.n1_mean, a.n1_rstd, tmp, n);
        for (size_t i = 0; i < dcur.size(); ++i) dcur[i] += tmp[i];
      } else {
        // dx_in = ds1 + dn1, written into dcur
        dcur.resize(ds1->size());
        for (size_t i = 0; i < dcur.size(); ++i) dcur[i] = (*ds1)[i] + dn1[i];
      }
    }
    nn::embeddingBackward(dcur.data(), tokens.data(), grd(wte).data(),
                          wpe >= 0 ? grd(wpe).data() : static_cast<T*>(nullptr), B, Tn, C);
  }
};

template <class T>
TransformerModel<T>::TransformerModel(const TransformerConfig& cfg, uint64_t seed) : d(std::make_unique<Impl>()) {
  if (const std::string why = cfg.validate(); !why.empty()) throw std::invalid_argument("transformer: " + why);
  d->cfg = cfg;
  d->build(seed);
}

template <class T> TransformerModel<T>::~TransformerModel() = default;
template <class T> TransformerModel<T>::TransformerModel(TransformerModel&&) noexcept = default;

template <class T> const TransformerConfig& TransformerModel<T>::config() const {
  return d->cfg;
}
template <class T> std::vector<Param<T>>& TransformerModel<T>::params() {
  return d->params;
}
template <class T> const std::vector<Param<T>>& TransformerModel<T>::params() const {
  return d->params;
}
template <class T> Param<T>* TransformerModel<T>::find(const std::string& name) {
  for (Param<T>& p : d->params)
    if (p.name == name) return &p;
  return nullptr;
}

template <class T>
double TransformerModel<T>::forward(const int32_t* tokens, const int32_t* targets, int64_t batch, int64_t t,
                                    LinearOps<T>& ops, std::vector<T>* logits) {
  return d->forward(tokens, targets, batch, t, ops, logits);
}

template <class T> void TransformerModel<T>::backward(int64_t count, LinearOps<T>& ops) {
  d->backward(count, ops);
}

template <class T> void TransformerModel<T>::setThreads(int threads) {
  d->threads = threads;
}

template <class T> void TransformerModel<T>::zeroGrad() {
  for (Param<T>& p : d->params) std::fill(p.grad.begin(), p.grad.end(), T(0));
}

template <class T> TransformerTaps<T> TransformerModel<T>::taps() const {
  TransformerTaps<T> t;
  t.n = d->B * d->Tn;
  t.batch = d->B;
  t.t = d->Tn;
  t.embedding = d->x0.data();
  const SiteTable table = d->cfg.sites();
  t.site_input.assign(table.size(), nullptr);
  t.site_input_cols.assign(table.size(), 0);
  for (size_t l = 0; l < d->acts.size(); ++l) {
    const auto& a = d->acts[l];
    const auto& s = d->bs[l];
    t.block_out.push_back(a.x_out.data());
    t.attn_probs.push_back(a.probs.data());
    const T* ffn_in = d->cfg.pre_norm ? a.n2.data() : a.x_mid.data();
    t.site_input[s.qkv] = d->cfg.pre_norm ? a.n1.data() : a.x_in.data();
    t.site_input[s.out] = a.att.data();
    t.site_input[s.up] = ffn_in;
    if (d->cfg.ffn == FfnKind::Swiglu) t.site_input[s.gate] = ffn_in;
    t.site_input[s.down] = a.act.data();
  }
  const T* head_in = d->cfg.pre_norm ? d->lnf.data() : (d->acts.empty() ? d->x0.data() : d->acts.back().x_out.data());
  t.site_input[d->lm_site] = head_in;
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].kind == SiteKind::Linear) t.site_input_cols[i] = table[i].in;
  return t;
}

template <class T>
std::vector<int32_t> TransformerModel<T>::generate(std::vector<int32_t> prompt, int64_t count, double temperature,
                                                   uint64_t seed, LinearOps<T>& ops) {
  TrainingRng rng(seed);
  const int64_t V = d->cfg.vocab;
  std::vector<int32_t> out;
  std::vector<T> logits;
  if (prompt.empty()) prompt.push_back('\n');
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = std::min<int64_t>(int64_t(prompt.size()), d->cfg.context);
    d->forward(prompt.data() + prompt.size() - size_t(t), nullptr, 1, t, ops, &logits);
    const T* z = logits.data() + (t - 1) * V;
    int32_t next = 0;
    if (temperature <= 0) {
      next = int32_t(std::max_element(z, z + V) - z);
    } else {
      const T m = *std::max_element(z, z + V);
      std::vector<double> p(static_cast<size_t>(V));
      double s = 0;
      for (int64_t j = 0; j < V; ++j) s += p[size_t(j)] = std::exp(double(z[j] - m) / temperature);
      double u = double(rng.uniform01()) * s;
      next = int32_t(V - 1);
      for (int64_t j = 0; j < V; ++j)
        if ((u -= p[size_t(j)]) < 0) {
          next = int32_t(j);
          break;
        }
    }
    prompt.push_back(next);
    out.push_back(next);
  }
  return out;
}

template class TransformerModel<float>;
template class TransformerModel<double>;

} // namespace fp8lab
