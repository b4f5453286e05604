// fp8lab — the FP8 Lab desktop application. A thin main: command line, then the MainWindow of
// fp8lab_ui. `--grab FILE.png [--view NAME]` renders one view offscreen and exits (screenshots,
// CI, docs); NAME is a view id (bits, numberline, codes, learn, ...) or learn:N for a demo.
#include "session/autosave.h"
#include "common/cpu_level.h"
#include "views/bit_layout_view.h"
#include "forms/experiment_panel.h"
#include "learn/learn_page.h"
#include "forms/live_experiment.h"
#include "main_window.h"
#include "session/session_document.h"
#include "views/view.h"
#include "views/view_registry.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEvent>
#include <QThreadPool>
#include <QTimer>

#include <cstdio>
#include <cstring>

namespace {
// The names --view accepts, from the one registry of views (ui/views/view_registry.h), in tab order:
// each view id, and learn:N after "learn" for the Learn page's demos.
QString viewNamesText() {
  QStringList names;
  for (const fp8lab::ui::ViewType& t : fp8lab::ui::viewTypes()) {
    names << t.id;
    if (t.id == QStringLiteral("learn"))
      names << QStringLiteral("learn:N (N = 0..%1)").arg(fp8lab::ui::LearnPage::kDemoCount - 1);
  }
  return names.join(QStringLiteral(", "));
}

// The options of `fp8lab`. Set up before any application object exists, so that --help,
// --version and a bad option are answered without a display (QApplication aborts without one).
struct Options {
  QCommandLineOption grab{QStringLiteral("grab"),
                          QStringLiteral("Render the window to FILE.png and exit (offscreen works)."),
                          QStringLiteral("FILE.png")};
  QCommandLineOption view{QStringLiteral("view"), QStringLiteral("View to show first: %1.").arg(viewNamesText()),
                          QStringLiteral("NAME")};
  QCommandLineOption widgetOnly{QStringLiteral("grab-view-only"),
                                QStringLiteral("With --grab: render only the view, not the window.")};
  QCommandLineOption panelTab{QStringLiteral("panel-tab"),
                              QStringLiteral("Experiment panel tab to show first: gemm or training."),
                              QStringLiteral("TAB")};
  QCommandLineOption run{QStringLiteral("run"),
                         QStringLiteral("Run of the session to make current (the views follow it)."),
                         QStringLiteral("ID")};
  QCommandLineOption noSession{QStringLiteral("no-default-session"),
                               QStringLiteral("Do not open the bundled default session.")};
  QCommandLineOption live{QStringLiteral("live"),
                          QStringLiteral("With --grab: run the Experiment panel's GEMM live first and grab its result "
                                         "(shown by the views, not kept in the session), as Live mode does.")};
  QCommandLineOption timing{QStringLiteral("startup-time"),
                            QStringLiteral("Print the time to the first paint (ms) to stderr.")};
  QCommandLineOption help{QStringList{QStringLiteral("h"), QStringLiteral("help")},
                          QStringLiteral("Displays help on commandline options.")};
  QCommandLineOption version{QStringList{QStringLiteral("v"), QStringLiteral("version")},
                             QStringLiteral("Displays version information.")};

  void addTo(QCommandLineParser& p) const {
    p.setApplicationDescription(QStringLiteral(
        "FP8 Lab \u2014 explore FP8 / MX number formats, scaling strategies, FP8 GEMM and FP8 training."));
    p.addOptions({help, version, grab, view, widgetOnly, panelTab, run, noSession, live, timing});
    p.addPositionalArgument(QStringLiteral("session"), QStringLiteral("Session file (.h5) to open."),
                            QStringLiteral("[session]"));
  }
};

void setNames() {
  QCoreApplication::setApplicationName(QStringLiteral("FP8 Lab"));
  QCoreApplication::setApplicationVersion(QStringLiteral(FP8LAB_VERSION));
  QCoreApplication::setOrganizationName(QStringLiteral("FP8 Lab"));
}
} // namespace

int main(int argc, char** argv) {
  QElapsedTimer since_start;
  since_start.start();
  const Options o;
  QCommandLineParser p;
  o.addTo(p);
  {
    // Qt's own options (-platform, -style, ...) are unknown to this parser and make parse()
    // return false; they are taken out by QApplication and checked by process() below.
    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    p.parse(args);
    if (p.isSet(o.help) || p.isSet(o.version)) {
      // Text only: a QCoreApplication needs no display.
      QCoreApplication core(argc, argv);
      setNames();
      if (p.isSet(o.help))
        std::fputs(qPrintable(p.helpText()), stdout);
      else
        std::printf("%s %s\n", qPrintable(QCoreApplication::applicationName()),
                    qPrintable(QCoreApplication::applicationVersion()));
      return 0;
    }
  }
  if (const std::string why = fp8lab::cpuLevelEnvironmentError(); !why.empty()) {
    std::fprintf(stderr, "fp8lab: %s\n", why.c_str());
    return 2;
  }
  // Without a display and without a chosen platform Qt aborts (SIGABRT); say what to do instead.
  bool platform_arg = false;
  for (int i = 1; i < argc; ++i) platform_arg = platform_arg || std::strcmp(argv[i], "-platform") == 0;
  if (!platform_arg && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    std::fputs("fp8lab: no display (DISPLAY and WAYLAND_DISPLAY are unset): run it in a desktop session, under "
               "xvfb-run, or with QT_QPA_PLATFORM=offscreen for --grab; fp8lab-cli works without one\n",
               stderr);
    return 1;
  }
  QApplication app(argc, argv);
  setNames();
  QApplication::setDesktopFileName(QStringLiteral("io.github.fp8lab.FP8Lab"));
  const QCommandLineOption& grab = o.grab;
  const QCommandLineOption& viewOpt = o.view;
  const QCommandLineOption& widgetOnly = o.widgetOnly;
  const QCommandLineOption& noSession = o.noSession;
  const QCommandLineOption& timing = o.timing;
  p.process(app); // the arguments without Qt's own; a bad option prints the reason and exits 1

  fp8lab::ui::MainWindow::Options opt;
  const bool grabbing = p.isSet(grab);
  opt.restore_settings = !grabbing;
  opt.open_default_session = !p.isSet(noSession) && p.positionalArguments().isEmpty();
  fp8lab::ui::MainWindow w(opt);
  if (!p.positionalArguments().isEmpty()) w.openSession(p.positionalArguments().first());
  if (p.isSet(o.run)) {
    const int index = w.session()->indexOf(p.value(o.run));
    if (index < 0) {
      std::fprintf(stderr, "fp8lab: the session has no run '%s'\n", qPrintable(p.value(o.run)));
      return 2;
    }
    w.session()->setCurrentRun(index);
  }
  if (p.isSet(viewOpt)) {
    QString v = p.value(viewOpt);
    int demo = -1;
    bool known = true;
    if (v.startsWith(QStringLiteral("learn:"))) {
      demo = v.mid(6).toInt(&known);
      known = known && demo >= 0 && demo < fp8lab::ui::LearnPage::kDemoCount;
      v = QStringLiteral("learn");
    }
    if (!known || !w.showView(v)) {
      std::fprintf(stderr, "fp8lab: unknown view '%s'; the views: %s\n", qPrintable(p.value(viewOpt)),
                   qPrintable(viewNamesText()));
      return 2;
    }
    if (demo >= 0)
      if (auto* l = qobject_cast<fp8lab::ui::LearnPage*>(w.view(QStringLiteral("learn")))) l->setDemo(demo);
  }
  if (p.isSet(o.panelTab))
    w.experimentPanel()->showTab(p.value(o.panelTab) == QStringLiteral("training")
                                     ? fp8lab::ui::ExperimentPanel::Tab::Training
                                     : fp8lab::ui::ExperimentPanel::Tab::Gemm);
  w.show();
  // First paint: the first Paint event the current view receives (it draws the content a user
  // sees first). Measured from the start of main(), so it excludes only the dynamic loader.
  struct FirstPaint : QObject {
    QElapsedTimer* t;
    bool done = false;
    explicit FirstPaint(QElapsedTimer* timer) : t(timer) {}
    bool eventFilter(QObject*, QEvent* e) override {
      if (!done && e->type() == QEvent::Paint) {
        done = true;
        std::fprintf(stderr, "first paint after %lld ms\n", static_cast<long long>(t->elapsed()));
        std::fflush(stderr);
      }
      return false;
    }
  } first_paint(&since_start);
  if (p.isSet(timing) && w.currentView()) w.currentView()->installEventFilter(&first_paint);
  if (grabbing) {
    const QString file = p.value(grab);
    const bool only = p.isSet(widgetOnly);
    const bool live = p.isSet(o.live);
    if (live) {
      // The panel's current GEMM, run as a configuration change in Live mode runs it.
      fp8lab::ui::ExperimentPanel* panel = w.experimentPanel();
      fp8lab::ui::GemmRunRequest request{panel->config(), panel->backend()};
      request.config[QStringLiteral("name")] = w.session()->nextRunId();
      if (w.liveExperiment() && panel->isLive()) w.liveExperiment()->request(request);
    }
    QTimer::singleShot(400, &w, [&w, file, only, live] {
      if (live && w.liveExperiment()) {
        // The live run finishes on the thread pool; its result reaches the views as a queued signal.
        w.liveExperiment()->waitForIdle();
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
        if (!w.liveExperiment()->last())
          std::fprintf(stderr, "fp8lab: --live: the panel's GEMM did not run live (Live off, not valid, or over "
                               "the live size limit): grabbing without it\n");
      }
      // Views read large maps on the thread pool (error heatmap): let those reads land first.
      QThreadPool::globalInstance()->waitForDone(15000);
      for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
      QWidget* target = only && w.currentView() ? static_cast<QWidget*>(w.currentView()) : &w;
      const bool ok = target->grab().save(file);
      if (!ok) std::fprintf(stderr, "fp8lab: cannot write %s\n", qPrintable(file));
      QApplication::exit(ok ? 0 : 1);
    });
  }
  // Autosave + crash recovery (ui/session/autosave.h); not while grabbing screenshots.
  std::unique_ptr<fp8lab::ui::Autosave> autosave;
  if (!grabbing) autosave = fp8lab::ui::Autosave::start(&w, w.session());
  const int rc = app.exec();
  if (autosave) autosave->discard(); // a normal exit: the user saved or chose to discard
  return rc;
}
