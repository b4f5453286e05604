#include "run_box.h"

#include "run_access.h"
#include "session_document.h"
#include "view.h"

#include <QComboBox>

namespace fp8lab::ui {

RunBox::RunBox(View* view, QComboBox* box, Filter lists)
    : QObject(view), view_(view), box_(box), lists_(std::move(lists)) {
  connect(box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) Q_EMIT chosen(false);
  });
}

void RunBox::setSession(SessionDocument* session) {
  session_ = session;
  if (!session) return;
  auto reload = [this] { view_->whenShown(0, [this] { rebuild(true); }); };
  connect(session, &SessionDocument::reset_, this, reload);
  connect(session, &SessionDocument::runAdded, this, reload);
  connect(session, &SessionDocument::runRemoved, this, reload);
  connect(session, &SessionDocument::runChanged, this, reload);
  connect(session, &SessionDocument::currentRunChanged, this,
          [this](int index) { view_->whenShown(1, [this, index] { follow(index); }); });
  rebuild(false);
}

void RunBox::follow(int index) {
  if (index < 0 || !session_ || index >= session_->runCount()) return;
  const int i = box_->findData(session_->run(index).id);
  if (i < 0 || i == box_->currentIndex()) return;
  updating_ = true;
  box_->setCurrentIndex(i);
  updating_ = false;
  Q_EMIT chosen(true);
}

void RunBox::rebuild(bool background) {
  if (!session_) return;
  const QString was = box_->currentData().toString();
  updating_ = true;
  box_->clear();
  for (const RunRecord& r : session_->runs())
    if (lists_(r))
      box_->addItem(r.label == r.id ? r.id : r.label + QStringLiteral(" (") + r.id + QLatin1Char(')'), r.id);
  int i = box_->findData(was);
  if (i < 0 && session_->currentRun() >= 0) i = box_->findData(session_->run(session_->currentRun()).id);
  box_->setCurrentIndex(i < 0 ? 0 : i);
  updating_ = false;
  Q_EMIT chosen(background);
}

void RunBox::showOnly(const QString& id) {
  updating_ = true;
  box_->clear();
  if (!id.isEmpty()) box_->addItem(id, id);
  updating_ = false;
}

bool RunBox::select(const QString& id) {
  const int i = box_->findData(id);
  if (i < 0) return false;
  updating_ = true;
  box_->setCurrentIndex(i);
  updating_ = false;
  return true;
}

QString RunBox::currentId() const {
  return box_->currentData().toString();
}

std::shared_ptr<RunAccess> RunBox::access() const {
  if (!session_) return nullptr;
  const int i = session_->indexOf(currentId());
  return i >= 0 ? RunAccess::forRecord(session_->run(i), session_->fileName()) : nullptr;
}

bool RunBox::lists(const QString& id) const {
  if (!session_) return false;
  const int i = session_->indexOf(id);
  return i >= 0 && lists_(session_->run(i));
}

} // namespace fp8lab::ui
