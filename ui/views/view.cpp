#include "views/view.h"

#include "session/session_document.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSaveFile>

namespace fp8lab::ui {

QComboBox* View::runComboBox(const QString& object_name) {
  auto* box = new QComboBox(this);
  box->setObjectName(object_name);
  box->setMinimumContentsLength(16);
  box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  return box;
}

void View::addLabeled(QHBoxLayout* bar, const QString& text, QWidget* buddy) {
  auto* l = new QLabel(text, this);
  l->setBuddy(buddy);
  bar->addWidget(l);
  bar->addWidget(buddy);
}

void View::whenShown(int key, std::function<void()> reload) {
  if (isVisible() || window() == this) {
    pending_.erase(key);
    reload();
    return;
  }
  pending_[key] = std::move(reload);
}

void View::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  runPendingReloads();
  offerShownRun();
}

void View::offerShownRun() {
  QMetaObject::invokeMethod(
      this,
      [this] {
        if (!session_ || !isVisible() || session_->currentRunChosen()) return;
        const QString id = shownRunId();
        if (!id.isEmpty() && id != session_->currentRunId()) session_->setDefaultRunId(id);
      },
      Qt::QueuedConnection);
}

void View::runPendingReloads() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [key, reload] : pending) reload();
}

bool exportCsv(View* view, const QString& fileName, QString* error) {
  const QString text = view->csv();
  if (text.isEmpty()) {
    if (error) *error = QObject::tr("the view '%1' has no data to export").arg(view->title());
    return false;
  }
  QSaveFile f(fileName);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = f.errorString();
    return false;
  }
  f.write(text.toUtf8());
  if (!f.commit()) {
    if (error) *error = f.errorString();
    return false;
  }
  return true;
}

} // namespace fp8lab::ui
