// Tests for core/teaching/memory_budget and core/scaling/scale_overhead. Expected values:
//   * published parameter counts: GPT-2 small 124,439,808 (Hugging Face gpt2, tied head),
//     Llama 2 7B 6,738,415,616 (meta-llama/Llama-2-7b-hf), Llama 3 70B 70,553,706,496
//     (meta-llama/Meta-Llama-3-70B);
//   * Korthikanti et al. 2022, Eq. 1: 34·s·b·h + 5·a·s²·b bytes of activations per layer (16-bit,
//     dropout, no flash attention);
//   * scale overheads derived by hand from block sizes and scale formats (comments).
#include <QtTest>

#include "scaling/scale_overhead.h"
#include "teaching/memory_budget.h"

using namespace fp8lab;

namespace {
const MemoryLine* line(const MemoryBudget& b, const std::string& name) {
  for (const auto& l : b.lines)
    if (l.tensor_class == name) return &l;
  return nullptr;
}
} // namespace

class TestMemoryBudget : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void publishedParameterCounts() {
    QCOMPARE(parameterCount(*transformerShape("gpt2_small")), int64_t(124439808));
    QCOMPARE(parameterCount(*transformerShape("llama2_7b")), int64_t(6738415616));
    QCOMPARE(parameterCount(*transformerShape("llama3_70b")), int64_t(70553706496));
    // Llama 2 7B's weight matrices: 32 · (4 · 4096² + 3 · 4096 · 11008) = 6,476,005,376.
    QCOMPARE(gemmWeightCount(*transformerShape("llama2_7b")), int64_t(6476005376));
  }

  // GPT-2 small, s = 1024, b = 8, BF16, dropout, no flash attention: per layer
  // 34·1024·8·768 + 5·12·1024²·8 = 213,909,504 + 503,316,480 = 717,225,984 bytes; 12 layers.
  void korthikantiActivations() {
    MemoryBudgetConfig c;
    c.model = *transformerShape("gpt2_small");
    c.recipe = "bf16";
    c.dropout = true;
    c.flash_attention = false;
    const MemoryBudget b = memoryBudget(c);
    const double act = line(b, "activations: GEMM inputs")->bytes + line(b, "activations: other")->bytes;
    QCOMPARE(act, 12.0 * 717225984.0);
    // Of them the GEMM inputs are 14·s·b·h per layer.
    QCOMPARE(line(b, "activations: GEMM inputs")->bytes, 12.0 * 14 * 1024 * 8 * 768);
    // Mixed precision: 4 (master) + 4 (gradient) + 8 (Adam) bytes per parameter, plus the BF16 copy.
    QCOMPARE(line(b, "master weights")->bytes, 4.0 * 124439808);
    QCOMPARE(line(b, "Adam moments")->bytes, 8.0 * 124439808);
    QCOMPARE(line(b, "weights (GEMM copy)")->bytes + line(b, "other parameters")->bytes, 2.0 * 124439808);
    double sum = 0;
    for (const auto& l : b.lines) sum += l.bytes;
    QCOMPARE(b.total_bytes, sum);
    QCOMPARE(b.scale_bytes, 0.0);
  }

  // Weight scales of Llama 2 7B (6,476,005,376 matrix elements, every dimension a multiple of 32):
  //   mxfp8: one E8M0 byte per 32 → 202,375,168 B;
  //   nvfp4: one E4M3 byte per 16 → 404,750,336 B, plus a float32 per matrix (7 · 32 · 4 = 896 B);
  //   fp8_block: 128×128 tiles, float32: per layer q, k, v, o 4 · 32·32, gate and up 2 · 86·32,
  //     down 32·86 → 12,352 scales · 4 B · 32 layers = 1,581,056 B (11008 / 128 = 86).
  // Activation scales, b = 1, s = 4096: fp8_block 1×128 float32 per token: 3·4096/128 + 11008/128
  //   = 182 scales · 4 B · 4096 tokens · 32 layers = 95,420,416 B.
  // fp8_delayed scaling state: 12 tensors per layer · 32 · (1024 · 4 + 8) = 1,575,936 B.
  void scaleOverheadsByHand() {
    MemoryBudgetConfig c;
    c.model = *transformerShape("llama2_7b");
    c.batch = 1;
    c.sequence = 4096;
    c.recipe = "mxfp8";
    QCOMPARE(line(memoryBudget(c), "weights (GEMM copy)")->scale_bytes, 202375168.0);
    c.recipe = "nvfp4";
    const MemoryBudget nv = memoryBudget(c);
    QCOMPARE(line(nv, "weights (GEMM copy)")->scale_bytes, 404750336.0 + 896.0);
    QCOMPARE(line(nv, "weights (GEMM copy)")->element_bytes, 0.5);
    c.recipe = "fp8_block";
    const MemoryBudget blk = memoryBudget(c);
    QCOMPARE(line(blk, "weights (GEMM copy)")->scale_bytes, 1581056.0);
    QCOMPARE(line(blk, "activations: GEMM inputs")->scale_bytes, 95420416.0);
    c.recipe = "fp8_delayed";
    const MemoryBudget del = memoryBudget(c);
    QCOMPARE(line(del, "scaling state")->bytes, 1575936.0);
    QCOMPARE(line(del, "weights (GEMM copy)")->bytes, 6476005376.0 + 4.0 * 7 * 32);
  }

  // scaleStorage on one tensor [4096, 4096]: per tensor 1 float32 (4 B); 1x128 along K 4096·32
  // scales (524,288 B = 1/32 B per element); MX 32: 4096·128 E8M0 bytes (1/32 B per element);
  // NVFP4 (TE): 4096·256 E4M3 bytes + 4 B.
  void scaleStorageByHand() {
    const int64_t n = 4096;
    QCOMPARE(scaleStorage(*scalingPreset("te_current"), n, n, Axis::Cols).bytes, 4.0);
    const ScaleStorage b = scaleStorage(*scalingPreset("deepgemm_1x128"), n, n, Axis::Cols);
    QCOMPARE(b.scales, int64_t(4096 * 32));
    QCOMPARE(b.bytesPerElement(n * n), 4.0 / 128);
    const ScaleStorage mx = scaleStorage(*scalingPreset("mx_rceil"), n, n, Axis::Rows);
    QCOMPARE(mx.scale_format, std::string("E8M0"));
    QCOMPARE(mx.bytes, 4096.0 * 128);
    const ScaleStorage nv = scaleStorage(*nvfp4Preset("nvfp4_te"), n, n, Axis::Cols);
    QCOMPARE(nv.bytes, 4096.0 * 256 + 4);
    QCOMPARE(scaleStorage(*nvfp4Preset("nvfp4_torchao_single_level"), n, n, Axis::Cols).tensor_scales, int64_t(0));
    // A partial edge block counts as one: [100, 130] in 1x128 → 100 rows · 2 blocks.
    QCOMPARE(scaleStorage(*scalingPreset("deepgemm_1x128"), 100, 130, Axis::Cols).scales, int64_t(200));
  }

  void badInput() {
    MemoryBudgetConfig c;
    c.model = *transformerShape("gpt2_small");
    c.recipe = "fp7";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, memoryBudget(c));
    c.recipe = "bf16";
    c.model.heads = 7;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, memoryBudget(c));
    c.model = *transformerShape("gpt2_small");
    c.batch = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, memoryBudget(c));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, scaleStorage(*scalingPreset("te_current"), -1, 4, Axis::Cols));
  }
};

QTEST_MAIN(TestMemoryBudget)
#include "test_memory_budget.moc"
