// The view registry (ui/views/view_registry.h) on its own: this file names no view class, so the views
// are in the registry only because their own .cpp registered them and the link kept those files
// (fp8lab_ui links its archive whole). The ids and titles are the ones saved settings, --view and
// the View menu use.
#include "views/view.h"
#include "views/view_registry.h"

#include "expected_views.h"

#include <QFile>
#include <QtTest>

#include <memory>

using namespace fp8lab::ui;

class TestViewRegistry : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void everyViewIsRegisteredInTabOrder() {
    const QStringList& ids = fp8lab::testsupport::kExpectedViewIds;
    const QStringList& titles = fp8lab::testsupport::kExpectedViewTitles;
    QStringList registered;
    int previous = -1;
    for (const ViewType& t : viewTypes()) {
      registered << t.id;
      QVERIFY2(t.order > previous, qPrintable(t.id)); // distinct, ascending
      previous = t.order;
      std::unique_ptr<View> v(t.create(nullptr));
      QVERIFY(v);
      QCOMPARE(v->viewId(), t.id);
      QCOMPARE(v->title(), titles.value(int(registered.size()) - 1));
    }
    QCOMPARE(registered, ids);
  }

  // docs/gui.md's list of --view ids names every registered view.
  void docsListEveryViewId() {
    QFile f(QStringLiteral(FP8LAB_SOURCE_DIR "/docs/gui.md"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString doc = QString::fromUtf8(f.readAll());
    const qsizetype from = doc.indexOf(QStringLiteral("`NAME` is a view id"));
    QVERIFY(from >= 0);
    const QString list = doc.mid(from, doc.indexOf(QStringLiteral("\n\n"), from) - from);
    for (const ViewType& t : viewTypes())
      QVERIFY2(list.contains(QLatin1Char('`') + t.id + QLatin1Char('`')),
               qPrintable(t.id + QStringLiteral(": ") + list));
  }

  // A second registration of an id keeps the first, so a view is never shown twice.
  void anIdRegisteredTwiceKeepsTheFirst() {
    const auto before = viewTypes();
    QVERIFY(registerViewType({QStringLiteral("bits"), 1000, [](QWidget*) -> View* { return nullptr; }, {}}));
    const auto after = viewTypes();
    QCOMPARE(after.size(), before.size());
    QCOMPARE(after.front().id, QStringLiteral("bits"));
    QCOMPARE(after.front().order, before.front().order);
  }
};

QTEST_MAIN(TestViewRegistry)
#include "test_view_registry.moc"
