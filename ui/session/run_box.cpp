#include "session/run_box.h"

#include "session/run_access.h"
#include "session/session_document.h"
#include "views/view.h"

#include <QComboBox>

namespace fp8lab::ui {

RunBox::RunBox(View* view, QComboBox* box, RunCaps lists) : QObject(view), view_(view), box_(box), lists_(lists) {
  box_->setPlaceholderText(tr("(choose a run)"));
  connect(box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    unlisted_.clear();
    Q_EMIT chosen(false);
    // The user's choice here is the session's current run: the tree and the other views follow.
    if (selection_ && box_->currentIndex() >= 0 && !extraShown()) {
      updating_ = true;
      selection_->setCurrentRunId(box_->currentData().toString());
      updating_ = false;
    }
  });
}

void RunBox::setSession(SessionDocument* session) {
  session_ = session;
  if (!session) return;
  delete proxy_;
  proxy_ = new RunFilterProxy(runModel(session), lists_, this);
  selection_ = runSelection(session);
  auto reload = [this] { view_->whenShown(0, [this] { rebuild(true); }); };
  connect(session, &SessionDocument::reset_, this, reload);
  connect(session, &SessionDocument::runAdded, this, reload);
  connect(session, &SessionDocument::runRemoved, this, reload);
  connect(session, &SessionDocument::runChanged, this, reload);
  connect(selection_, &RunSelection::currentRunChanged, this,
          [this] { view_->whenShown(1, [this] { follow(session_->currentRun()); }); });
  rebuild(false);
}

void RunBox::follow(int index) {
  if (index < 0 || !session_ || index >= session_->runCount()) return;
  const QString id = session_->run(index).id;
  const int i = box_->findData(id);
  // A load's default current run does not replace the run a preference chose.
  if (preferred_ && !session_->currentRunChosen() && box_->currentIndex() >= 0) return;
  if (i < 0) {
    // A run the box does not list: when the user chose it, the view shows no run and says why;
    // when a load merely defaulted to it, the view keeps the first run it can show.
    if (!session_->currentRunChosen()) {
      if (box_->currentIndex() < 0 && box_->count() > 0) {
        updating_ = true;
        box_->setCurrentIndex(0);
        updating_ = false;
        Q_EMIT chosen(true);
      }
      view_->offerShownRun();
      return;
    }
    if (unlisted_ == id && box_->currentIndex() < 0) return;
    unlisted_ = id;
    updating_ = true;
    box_->setCurrentIndex(-1);
    updating_ = false;
    Q_EMIT chosen(true);
    return;
  }
  const bool was_unlisted = !unlisted_.isEmpty();
  unlisted_.clear();
  if (i == box_->currentIndex() && !was_unlisted) return;
  updating_ = true;
  box_->setCurrentIndex(i);
  updating_ = false;
  Q_EMIT chosen(true);
}

void RunBox::rebuild(bool background) {
  if (!session_) return;
  const QString was = box_->currentData().toString();
  const bool had = box_->currentIndex() >= 0; // (the extra item's id is "" too)
  updating_ = true;
  box_->clear();
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex i = proxy_->index(row, 0);
    box_->addItem(i.data().toString(), i.data(RunListModel::IdRole));
  }
  if (!extra_.isEmpty()) box_->addItem(extra_, QString());
  const QString current = session_->currentRun() >= 0 ? session_->run(session_->currentRun()).id : QString();
  // The run shown is kept (not the extra item: a rebuild leaves it for the runs).
  const int kept = had && !was.isEmpty() ? box_->findData(was) : -1;
  int i = kept;
  // A load's default current run gives way to the view's preference.
  if (i < 0 && preferred_ && !session_->currentRunChosen())
    for (int k = 0; k < box_->count(); ++k)
      if (preferred_(box_->itemData(k).toString())) {
        i = k;
        break;
      }
  if (i < 0 && !current.isEmpty()) i = box_->findData(current);
  // The current run still unlisted (its record changed, another run was added): still no run.
  if (!unlisted_.isEmpty() && was.isEmpty() && unlisted_ == current && box_->findData(current) < 0 &&
      session_->currentRunChosen())
    i = -1;
  else if (i < 0)
    i = 0;
  if (i >= 0) unlisted_.clear();
  box_->setCurrentIndex(i);
  updating_ = false;
  Q_EMIT chosen(background);
  view_->offerShownRun();
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

bool RunBox::extraShown() const {
  return !extra_.isEmpty() && box_->currentIndex() >= 0 && box_->currentIndex() == box_->count() - 1 &&
         box_->currentData().toString().isEmpty();
}

bool RunBox::lists(const QString& id) const {
  return proxy_ && proxy_->mapFromSource(proxy_->runModel()->indexOfId(id)).isValid();
}

} // namespace fp8lab::ui
