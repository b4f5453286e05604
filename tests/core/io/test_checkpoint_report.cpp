// core/io/fp8_checkpoint_report.h, core/experiment/training/checkpoint_export.h and the import summary of
// checkpoint_run.h: the text and JSON `checkpoint list | show | requantize | import` print, and
// the checkpoint a training run exports, on hand-made tensors whose FP8 codes are worked out by
// hand (OCP E4M3FN, bias 7: 1.0 = 0x38, 2.0 = 0x40, 3.0 = 1.5·2 = 0x44, 4.0 = 0x48, 5.0 = 1.25·4 =
// 0x4A, 448 = 1.75·2^8 = 0x7E).
#include <QtTest>

#include "common/names.h"
#include "common/number_text.h"
#include "experiment/training/checkpoint_export.h"
#include "experiment/training/checkpoint_run.h"
#include "formats/format.h"
#include "io/fp8_checkpoint_report.h"
#include "session/session_layout.h"

#include <cstring>

using namespace fp8lab;

namespace {

/// A 1×2 E4M3FN tensor, codes 1.0 and 2.0, one dequant scale 0.5: values 0.5 and 1.
QuantizedTensor handTensor() {
  QuantizedTensor t;
  t.format = &Format::E4M3FN();
  t.rows = 1;
  t.cols = 2;
  t.block = {1, 2};
  t.codes = {0x38, 0x40};
  t.dequant_scales = {0.5f};
  t.strategy = "stored";
  return t;
}

std::vector<float> floatsOf(const SafetensorsTensor& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

} // namespace

class TestCheckpointReport : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void listText() {
    Fp8CheckpointEntry a{"a.weight", "F8_E4M3", {2, 3}, "a.weight_scale", "F32", {1}, "per_tensor", ""};
    Fp8CheckpointEntry b{"b.weight", "F8_E5M2", {4}, "", "", {}, "", "not 2-D"};
    QCOMPARE(fp8CheckpointListText("m.safetensors", {a, b}),
             std::string("a.weight  F8_E4M3 [2, 3]  per_tensor: a.weight_scale F32 [1]\n"
                         "b.weight  F8_E5M2 [4]  not importable: not 2-D\n"));
    QCOMPARE(fp8CheckpointListText("m.safetensors", {}),
             std::string("no FP8 tensors (F8_E4M3, F8_E5M2) in m.safetensors\n"));
    QCOMPARE(fp8CheckpointListJson({a})[0].dump(),
             std::string(R"({"dtype":"F8_E4M3","layout":"per_tensor","name":"a.weight","problem":"",)"
                         R"("scale":"a.weight_scale","scale_dtype":"F32","scale_shape":[1],"shape":[2,3]})"));
  }

  void showText() {
    const QuantizedTensor t = handTensor();
    QCOMPARE(fp8TensorText(t), std::string("stored: E4M3FN [1, 2], scale blocks [1, 2], x = decode(code) * scale\n"
                                           "scales: 0.5\n"
                                           "(0, 0) 0x38 = 0.5\n"
                                           "(0, 1) 0x40 = 1\n"));
    QCOMPARE(fp8TensorJson("w", t).dump(),
             std::string(R"({"block":[1,2],"codes":[56,64],"dequant_scales":[0.5],"format":"E4M3FN",)"
                         R"("shape":[1,2],"shown":2,"strategy":"stored","tensor":"w","values":[0.5,1.0]})"));
  }

  // The same codes re-quantized with the same scale: nothing changes, SQNR +Inf.
  void requantizeText() {
    Fp8Requantized rq;
    rq.requantized = handTensor();
    rq.sqnr_db = INFINITY;
    rq.same_format = true;
    QCOMPARE(fp8RequantizedText("stored", "te_current", rq),
             std::string("stored:      stored\nrequantized: te_current E4M3FN, scale blocks [1, 2], 1 scales\n"
                         "SQNR vs the stored tensor (decode * scale): inf dB\ncodes changed: 0 of 2\n"
                         "saturated 0, underflow 0\n"));
    const Json j = fp8RequantizedJson("w", "stored", "te_current", rq);
    QCOMPARE(j["sqnr_db"], Json("inf"));
    QCOMPARE(j["codes_changed"], Json(0));
    QVERIFY(!j.contains("scale_codes"));
  }

  // The SQNR table: columns as wide as their widest cell, two spaces apart, the last not padded.
  void importText() {
    const std::vector<CheckpointSqnr> sqnr = {{"fc1.weight", 30.5f, {{"te_current", 29.25f}}},
                                              {"w", INFINITY, {{"te_current", 1.0f}}}};
    std::string why;
    const auto te = parseWhatIfRecipe("te_current", &why);
    QVERIFY2(te, why.c_str());
    QCOMPARE(checkpointImportText("m.safetensors", "m", 2, {*te}, sqnr, "o.h5"),
             std::string("m.safetensors: run m (2 FP8 tensors, 1 what-if recipe) written to o.h5\n"
                         "SQNR (dB) vs the weight as stored (decode * scale, float32):\n"
                         "tensor      stored  te_current\n"
                         "fc1.weight  30.5    29.25\n"
                         "w           inf     1\n"));
    QCOMPARE(checkpointImportText("m.safetensors", "m", 1, {}, sqnr, "o.h5"),
             std::string("m.safetensors: run m (1 FP8 tensor) written to o.h5\n"));
    QCOMPARE(checkpointImportJson("o.h5", "m", 2, 1, sqnr)["sqnr"][1].dump(),
             std::string(R"({"stored_sqnr_db":"inf","tensor":"w","what_if_sqnr_db":{"te_current":1.0}})"));
  }

  // An MLP run's kernel [in 2, out 3] = [[448, 1, 2], [3, 4, 5]] becomes fc1.weight [3, 2] =
  // kernelᵀ in per-tensor E4M3FN: amax 448, so TE's scale is 448 / 448 = 1 and the codes are the
  // values' own: 448 3 / 1 4 / 2 5.
  void exportMlp() {
    Run r;
    r.id = "t";
    r.type = "training";
    r.putFloat32(layout::weights("fc1/kernel"), {448, 1, 2, 3, 4, 5}, 2, 3, "1", "kernel");
    r.datasets[layout::weights("fc1/bias")] = Dataset::float32({3}, {0.5f, -1, 2}, "1", "bias");
    std::string e;
    const auto x = checkpointOfRun(r, Fp8ScaleLayout::PerTensor, Format::E4M3FN(), "s.h5#/runs/t", &e);
    QVERIFY2(x, e.c_str());
    QCOMPARE(x->tensors.size(), size_t{3});
    QCOMPARE(x->tensors[0].name, std::string("fc1.weight"));
    QCOMPARE(x->tensors[0].shape, (std::vector<int64_t>{3, 2}));
    QCOMPARE(x->tensors[0].bytes, (std::vector<unsigned char>{0x7E, 0x44, 0x38, 0x48, 0x40, 0x4A}));
    QCOMPARE(x->tensors[1].name, std::string("fc1.weight_scale"));
    QCOMPARE(floatsOf(x->tensors[1]), std::vector<float>{1.0f});
    QCOMPARE(x->tensors[2].name, std::string("fc1.bias"));
    QCOMPARE(floatsOf(x->tensors[2]), (std::vector<float>{0.5f, -1, 2}));
    QCOMPARE(x->metadata.at("layout"), std::string("per_tensor"));
    QCOMPARE(x->metadata.at("quantization"), std::string("te_current"));
    QCOMPARE(x->metadata.at("source"), std::string("s.h5#/runs/t"));
    QVERIFY(!x->metadata.count("model"));
    QCOMPARE(x->layers.dump(), std::string(R"([{"name":"fc1","saturated":0,"scales":1,"weight_shape":[3,2]}])"));
    QCOMPARE(checkpointExportText(*x, "m.safetensors"), std::string("wrote m.safetensors (1 layers, per_tensor)\n"));
  }

  // A language-model run: the sites' Linear weights in FP8 (lm_head and sites without a weight
  // skipped, blanks around names ignored), every other parameter in F32; a Linear weight that is
  // not 2-D is refused.
  void exportTransformer() {
    Run r;
    r.id = "lm";
    r.type = "training";
    r.attrs["sites"] = std::string("blocks.0.attn.qkv, blocks.0.attn.scores,,lm_head");
    r.putFloat32(layout::weights("blocks.0.attn.qkv.weight"), {448, 1, 2, 3, 4, 5}, 2, 3, "1", "");
    r.putFloat32(layout::weights("lm_head.weight"), {1, 2, 3, 4, 5, 6}, 2, 3, "1", "");
    r.datasets[layout::weights("ln.bias")] = Dataset::float32({2}, {7, 8}, "1", "");
    std::string e;
    const auto x = checkpointOfRun(r, Fp8ScaleLayout::Block, Format::E4M3FN(), "s", &e);
    QVERIFY2(x, e.c_str());
    QCOMPARE(x->metadata.at("quantized_modules"), std::string("blocks.0.attn.qkv"));
    QCOMPARE(x->metadata.at("tied_embeddings"), std::string("false"));
    QCOMPARE(x->metadata.at("layout"), std::string("block128x128"));
    std::vector<std::string> names;
    for (const auto& t : x->tensors) names.push_back(t.name);
    QCOMPARE(names, (std::vector<std::string>{"blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.weight_scale_inv",
                                              "lm_head.weight", "ln.bias"}));
    // lm_head [C 2, V 3] → [V 3, C 2]
    QCOMPARE(x->tensors[2].shape, (std::vector<int64_t>{3, 2}));
    QCOMPARE(floatsOf(x->tensors[2]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    QCOMPARE(
        checkpointExportText(*x, "m"),
        std::string("wrote m (1 Linear weights in FP8, block128x128; embeddings, norms, biases, lm_head in F32)\n"));
    r.datasets[layout::weights("blocks.0.attn.qkv.weight")] = Dataset::float32({6}, {1, 2, 3, 4, 5, 6}, "1", "");
    QVERIFY(!checkpointOfRun(r, Fp8ScaleLayout::Block, Format::E4M3FN(), "s", &e));
    QCOMPARE(e, std::string("weights/blocks.0.attn.qkv.weight is not 2-D [in, out]"));
  }

  // `checkpoint import --what-if`: items as typed, empty ones skipped, white space trimmed; a
  // blank item is an unknown recipe, a recipe given twice (by its canonical id) is refused.
  void whatIfList() {
    QCOMPARE(commaItems("a, b,,c,"), (std::vector<std::string>{"a", " b", "c"}));
    QCOMPARE(commaItems(""), std::vector<std::string>{});
    QCOMPARE(std::string(trimmedText("\t x y \n")), std::string("x y"));
    std::string why;
    const auto l = parseWhatIfList(" te_current ,mx_rceil,", &why);
    QVERIFY2(l, why.c_str());
    QCOMPARE(l->size(), size_t{2});
    QCOMPARE(l->at(0).id, std::string("te_current"));
    QCOMPARE(l->at(1).id, std::string("mx_rceil"));
    QVERIFY(!parseWhatIfList("te_current,te_current", &why));
    QCOMPARE(why, std::string("'te_current' is listed twice"));
    QVERIFY(!parseWhatIfList("te_current, ", &why));
    QVERIFY2(why.rfind("what-if recipe '': ", 0) == 0, why.c_str());
    QVERIFY(parseWhatIfList("", &why) && parseWhatIfList("", &why)->empty());
  }

  void layoutNames() {
    QCOMPARE(parseCheckpointExportLayout("per_tensor"), std::optional(Fp8ScaleLayout::PerTensor));
    QCOMPARE(parseCheckpointExportLayout("per_channel"), std::optional(Fp8ScaleLayout::PerChannel));
    QCOMPARE(parseCheckpointExportLayout("block128"), std::optional(Fp8ScaleLayout::Block));
    QCOMPARE(parseCheckpointExportLayout("block128x128"), std::optional(Fp8ScaleLayout::Block));
    QVERIFY(!parseCheckpointExportLayout("block"));
  }
};

QTEST_APPLESS_MAIN(TestCheckpointReport)
#include "test_checkpoint_report.moc"
