// A plot title that wraps at word boundaries instead of cutting words.
#pragma once

#include "plot/qcp.h"

#include <QStringList>

class QFontMetrics;

namespace fp8lab::ui {

/// `text` as the lines it takes in `width` pixels of `fm`: each of its '\n' lines broken at
/// spaces, as many words to a line as fit (greedy); a single word wider than `width` (a long run
/// id) is broken after a '-', '_', '/', '.' or ',' where one fits, else where the width ends.
/// Every character but the spaces at the breaks is kept. A width below 1 keeps the lines as they are.
QStringList wrapText(const QString& text, const QFontMetrics& fm, int width);

/// A title element (QCPTextElement) that wraps its text to the width the layout gives it and asks
/// for the height the wrapped lines need, never for width: a long run or tensor name neither
/// squeezes the plot beside it nor is cut in the middle of a word. Its width is that of the
/// viewport (less its margins), so it belongs in a row of the top-level layout with one column —
/// titledColorMap (plot_util.h) puts it there. text() keeps the title as given; drawnLines() is
/// what the last draw (or, before one, the current viewport) shows.
class WrappedTitle : public QCPTextElement {
public:
  WrappedTitle(QCustomPlot* plot, const QString& text, const QFont& font);
  QStringList drawnLines() const;

protected:
  QSize minimumOuterSizeHint() const override;
  QSize maximumOuterSizeHint() const override;
  void draw(QCPPainter* painter) override;

private:
  int textWidth() const; ///< the width the lines wrap to, pixels
  QSize outerSizeFor(int width) const;
};

} // namespace fp8lab::ui
