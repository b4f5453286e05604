// FP8 Lab tests — the desktop app's views as users see them (docs/gui.md, "Views"): their ids,
// which saved settings ("window/view"), `fp8lab --view` and the View menu's object names use, and
// their titles, in tab and View-menu order. Written out here, not read from the registry, so that
// the registry is checked against it.
#pragma once

#include <QStringList>

namespace fp8lab::testsupport {

inline const QStringList kExpectedViewIds = {
    QStringLiteral("bits"),         QStringLiteral("numberline"), QStringLiteral("codes"),    QStringLiteral("learn"),
    QStringLiteral("amax"),         QStringLiteral("scales"),     QStringLiteral("clipping"), QStringLiteral("heatmap"),
    QStringLiteral("block_scales"), QStringLiteral("compare"),    QStringLiteral("decide"),   QStringLiteral("layers"),
    QStringLiteral("block_map"),    QStringLiteral("attention")};

inline const QStringList kExpectedViewTitles = {
    QStringLiteral("Bit layout"), QStringLiteral("Number line"),   QStringLiteral("Code grid"),
    QStringLiteral("Learn"),      QStringLiteral("Amax history"),  QStringLiteral("Scale evolution"),
    QStringLiteral("Clipping"),   QStringLiteral("Error heatmap"), QStringLiteral("Block scales"),
    QStringLiteral("Comparison"), QStringLiteral("Decide"),        QStringLiteral("Layer \u00d7 step"),
    QStringLiteral("Block map"),  QStringLiteral("Attention")};

} // namespace fp8lab::testsupport
