#include "views/analysis_view.h"

#include "session/run_box.h"
#include "session/session_document.h"

#include <QComboBox>
#include <QHBoxLayout>

namespace fp8lab::ui {

AnalysisView::AnalysisView(RunCaps shows, QWidget* parent) : View(parent), shows_(shows) {}

AnalysisView::AnalysisView(QWidget* parent) : View(parent) {}

RunBox* AnalysisView::addRunBox(QHBoxLayout* bar) {
  auto* box = runComboBox(QStringLiteral("run"));
  addLabeled(bar, tr("&Run:"), box);
  return bindRunBox(box);
}

RunBox* AnalysisView::bindRunBox(QComboBox* box) {
  runs_ = new RunBox(this, box, shows_);
  connect(runs_, &RunBox::chosen, this,
          [this](bool background) { runChosen(background ? Read::Background : Read::BySize); });
  return runs_;
}

void AnalysisView::setSession(SessionDocument* session) {
  View::setSession(session);
  if (runs_) runs_->setSession(session);
}

QString AnalysisView::shownRunId() const {
  return runs_ ? runs_->currentId() : QString();
}

quint64 AnalysisView::newGeneration() {
  ++generation_;
  live_->store(generation_);
  loading_ = 0;
  return generation_;
}

std::function<bool()> AnalysisView::stillWanted(quint64 gen) const {
  return [live = live_, gen] { return live->load() == gen; };
}

bool AnalysisView::inBackground(Read read, int64_t elements) {
  return read == Read::Background || (read == Read::BySize && elements > kBackgroundReadElements);
}

void AnalysisView::showEmpty(const QString& text) {
  empty_ = text;
  drawEmptyState(text);
}

QString AnalysisView::noRunText(const QString& none, const std::function<QString(const RunRecord&)>& why) const {
  const int u = session_ && runs_ && !runs_->unlistedId().isEmpty() ? session_->indexOf(runs_->unlistedId()) : -1;
  if (u < 0) return none;
  const RunRecord& r = session_->run(u);
  const QString because = why ? why(r) : tr("Run %1 (%2) cannot be shown here.").arg(r.id, r.kind);
  return because + tr("\nChoose a run in the Run box above.");
}

} // namespace fp8lab::ui
