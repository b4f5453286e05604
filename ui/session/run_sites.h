// The operand sites of a training run as the views read them (docs/session-format.md, "Training
// runs" and "Language-model runs"): the run attribute `sites` of language-model runs
// ("blocks.0.attn.qkv,blocks.0.attn.scores,…,lm_head", in recording order) or, for runs without
// it (the MLP), the layers found under history/, block_stats/ and what_if/ by their number (fc2
// before fc10). The views order their rows and lists by it, and group the rows of a transformer by
// block and role (attention, FFN, head) from the site path. Nothing here builds a site name: every
// name comes from the run. No widgets.
#pragma once

#include "session/run_access.h"

#include <QString>
#include <QStringList>

namespace fp8lab::ui {

/// The site paths of `run` in recording order: its `sites` attribute when it has one, else the
/// layers under history/, block_stats/ and what_if/ by the number at their end, then by name.
QStringList runSites(const RunAccess& run);

/// The place of an operand in a site: input 0, kernel 1, output_grad 2, any other name 3.
int operandRank(const QString& operand);

/// What a view groups a row by, read from the path of a site ("blocks.1.attn.qkv"), a block
/// output ("blocks.1") or another tensor of the probes ("embedding").
struct SiteGroup {
  /// "blocks.1.attn", "blocks.1.ffn", "blocks.1" (the block's output), "head" (lm_head),
  /// "embedding"; "" for a path outside that naming (the MLP's fc<N>: one group, none drawn).
  QString key;
  QString label;  ///< "block 1 attention", "block 1 FFN", "block 1 output", "LM head", "embedding"
  int block = -1; ///< the block index (−1: none)
  QString role;   ///< "attn", "ffn", "output", "head", "embedding" or ""
};
SiteGroup siteGroup(const QString& path);

/// The sort position of a tensor among `sites` (runSites): a site's index; a block's output
/// ("blocks.<l>") just after the last site of block l, another tensor of block l ("blocks.<l>.ln1")
/// just before its first; the embeddings ("embedding", "wte", "wpe") before everything; any other
/// name after every site.
double tensorOrder(const QString& tensor, const QStringList& sites);

/// Sorts operand paths ("<site>/<operand>", as history/ and block_stats/ name them) by site
/// (tensorOrder over `sites`), then input, kernel, output_grad, then by name.
void sortOperandPaths(QStringList* paths, const QStringList& sites);

} // namespace fp8lab::ui
