// The views of the main window's tab area, registered by the views themselves: a view's .cpp
// holds one FP8LAB_REGISTER_VIEW line, and MainWindow builds its tabs and its View menu (with
// Alt+1 … Alt+9) from viewTypes(), in `order`. Neither the window nor this registry names a view
// class; views reach the window only through View's signals.
#pragma once

#include <QString>

#include <functional>
#include <vector>

class QWidget;

namespace fp8lab::ui {

class View;

struct ViewType {
  QString id;    ///< the view's viewId(): tab, View menu entry "showView_<id>", QSettings, --view
  int order = 0; ///< place in the tab bar and the View menu, ascending
  std::function<View*(QWidget* parent)> create;
};

/// Every registered view type, by ascending order (equal orders by id).
std::vector<ViewType> viewTypes();

/// Adds a view type (FP8LAB_REGISTER_VIEW does, before main()); an id registered twice keeps
/// the first. Returns true, so that it can initialise a static.
bool registerViewType(ViewType type);

} // namespace fp8lab::ui

/// Registers the View subclass `Class` (constructible from a QWidget* parent) as view `id` at
/// place `order` of the tab bar: `FP8LAB_REGISTER_VIEW(CodeGridView, "codes", 30);` once, inside
/// namespace fp8lab::ui of the view's .cpp.
/// The static initialiser runs because fp8lab_ui is linked whole (ui/CMakeLists.txt).
#define FP8LAB_REGISTER_VIEW(Class, id, order)                                                                         \
  [[maybe_unused]] static const bool fp8labRegistered##Class = ::fp8lab::ui::registerViewType(                         \
      {QStringLiteral(id), order, [](QWidget* parent) -> ::fp8lab::ui::View* { return new Class(parent); }})
