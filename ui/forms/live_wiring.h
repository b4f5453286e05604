// Connects live GEMM mode (live_experiment.h) to a main window: the Experiment panel's edits
// start live runs, their results go to the views that show one GEMM run (error heatmap, block
// scales, block map) without entering the session, and Keep / Ctrl+K adds the result shown to the
// session. Kept apart from main_window.cpp so the window only creates it.
#pragma once

namespace fp8lab::ui {

class LiveExperiment;
class MainWindow;

/// Creates the window's LiveExperiment (a child of the window) and wires it; returns it.
LiveExperiment* attachLiveExperiment(MainWindow* window);

} // namespace fp8lab::ui
