// The views of the main window's tab area, registered by the views themselves: a view's .cpp
// holds one FP8LAB_REGISTER_VIEW line, and MainWindow builds its tabs and its View menu (with
// Alt+1 … Alt+9) from viewTypes(), in `order`. Neither the window nor this registry names a view
// class; views reach the window only through View's signals.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <vector>

class QWidget;

namespace fp8lab::ui {

class View;
class RunAccess;
struct RenderScope; // view_render.h
struct RenderJob;   // view_render.h

/// How a view renders offscreen for `fp8lab-render` (view_render.h): the --views names it answers
/// to, and the files it adds for one run (per_run) or once for the whole session (per_session).
/// Registered by the view's .cpp with FP8LAB_REGISTER_RENDER; renderViews() asks every view type
/// that has one, in the registry's order.
struct ViewRendering {
  QStringList names; ///< --views names ("heatmap", "split", "kernel_check"); the first is the view's own
  std::function<void(const RenderScope&, const std::shared_ptr<RunAccess>&, QList<RenderJob>&)> per_run;
  std::function<void(const RenderScope&, QList<RenderJob>&)> per_session;
};

struct ViewType {
  QString id;    ///< the view's viewId(): tab, View menu entry "showView_<id>", QSettings, --view
  int order = 0; ///< place in the tab bar and the View menu, ascending
  std::function<View*(QWidget* parent)> create;
  ViewRendering render; ///< empty names: the view has no offscreen rendering
};

/// Every registered view type, by ascending order (equal orders by id).
std::vector<ViewType> viewTypes();

/// Adds a view type (FP8LAB_REGISTER_VIEW does, before main()); an id registered twice keeps
/// the first. Returns true, so that it can initialise a static.
bool registerViewType(ViewType type);

/// Adds the offscreen rendering of view `id` (FP8LAB_REGISTER_RENDER does, before main());
/// viewTypes() carries it in the type's `render`. Returns true, to initialise a static.
bool registerViewRendering(const QString& id, ViewRendering rendering);

} // namespace fp8lab::ui

/// Registers the View subclass `Class` (constructible from a QWidget* parent) as view `id` at
/// place `order` of the tab bar: `FP8LAB_REGISTER_VIEW(CodeGridView, "codes", 30);` once, inside
/// namespace fp8lab::ui of the view's .cpp.
/// The static initialiser runs because fp8lab_ui is linked whole (ui/CMakeLists.txt).
#define FP8LAB_REGISTER_VIEW(Class, id, order)                                                                         \
  [[maybe_unused]] static const bool fp8labRegistered##Class = ::fp8lab::ui::registerViewType(                         \
      {QStringLiteral(id), order, [](QWidget* parent) -> ::fp8lab::ui::View* { return new Class(parent); }, {}})

/// Registers how view `id` renders offscreen (ViewRendering): once, inside namespace fp8lab::ui of
/// the view's .cpp, beside its FP8LAB_REGISTER_VIEW line.
#define FP8LAB_REGISTER_RENDER(Class, id, ...)                                                                         \
  [[maybe_unused]] static const bool fp8labRendered##Class =                                                           \
      ::fp8lab::ui::registerViewRendering(QStringLiteral(id), ::fp8lab::ui::ViewRendering{__VA_ARGS__})
