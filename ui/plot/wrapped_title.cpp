#include "plot/wrapped_title.h"

#include <QFontMetrics>

#include <algorithm>

namespace fp8lab::ui {

namespace {

/// `word` cut into pieces no wider than `width`: after a '-', '_', '/', '.' or ',' where one fits
/// (a run id, a tensor path), else at the last character that fits. A piece is never empty.
QStringList breakWord(const QString& word, const QFontMetrics& fm, int width) {
  QStringList pieces;
  QString rest = word;
  while (fm.horizontalAdvance(rest) > width) {
    qsizetype fit = 1; // characters of `rest` that fit, at least one
    while (fit < rest.size() && fm.horizontalAdvance(rest.left(fit + 1)) <= width) ++fit;
    qsizetype cut = fit;
    for (qsizetype i = fit; i > 0; --i)
      if (QStringLiteral("-_/.,").contains(rest[i - 1])) {
        cut = i;
        break;
      }
    pieces << rest.left(cut);
    rest = rest.mid(cut);
  }
  if (!rest.isEmpty()) pieces << rest;
  return pieces;
}

} // namespace

QStringList wrapText(const QString& text, const QFontMetrics& fm, int width) {
  const QStringList paragraphs = text.split(QLatin1Char('\n'));
  if (width < 1) return paragraphs;
  QStringList out;
  for (const QString& p : paragraphs) {
    QString line;
    for (const QString& word : p.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
      const QString joined = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
      if (fm.horizontalAdvance(joined) <= width) {
        line = joined;
        continue;
      }
      if (!line.isEmpty()) out << line;
      QStringList pieces = breakWord(word, fm, width);
      line = pieces.takeLast();
      out << pieces;
    }
    out << line; // an empty line stays a line
  }
  return out;
}

WrappedTitle::WrappedTitle(QCustomPlot* plot, const QString& text, const QFont& font)
    : QCPTextElement(plot, text, font) {}

int WrappedTitle::textWidth() const {
  // Laid out, the element knows its width; before that (size hints come first) it is the
  // viewport's, which is what a one-column row of the top-level layout gets.
  const int w =
      mRect.width() > 0 ? mRect.width() : mParentPlot->viewport().width() - mMargins.left() - mMargins.right();
  return std::max(1, w);
}

QStringList WrappedTitle::drawnLines() const {
  return wrapText(mText, QFontMetrics(mFont), textWidth());
}

QSize WrappedTitle::outerSizeFor(int width) const {
  const QFontMetrics fm(mFont);
  const QStringList lines = wrapText(mText, fm, width);
  const QRect r = fm.boundingRect(0, 0, 0, 0, Qt::TextDontClip, lines.join(QLatin1Char('\n')));
  return {std::min(r.width(), width) + mMargins.left() + mMargins.right(),
          r.height() + mMargins.top() + mMargins.bottom()};
}

QSize WrappedTitle::minimumOuterSizeHint() const {
  // The height of the lines wrapped to the viewport's width; no minimum width beyond a word's.
  QSize s = outerSizeFor(mParentPlot->viewport().width() - mMargins.left() - mMargins.right());
  s.setWidth(std::min(s.width(), 120));
  return s;
}

QSize WrappedTitle::maximumOuterSizeHint() const {
  return {QWIDGETSIZE_MAX, minimumOuterSizeHint().height()};
}

void WrappedTitle::draw(QCPPainter* painter) {
  painter->setFont(mainFont());
  painter->setPen(QPen(mainTextColor()));
  painter->drawText(mRect, Qt::AlignCenter, drawnLines().join(QLatin1Char('\n')));
}

} // namespace fp8lab::ui
