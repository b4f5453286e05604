// The session report (core/experiment/decision/session_report.h) written from the desktop app and
// fp8lab-render: HTML as core builds it, or PDF through Qt's PDF writer (QPdfWriter), the report's
// HTML laid out by QTextDocument with its SVG figures drawn by QSvgRenderer.
#pragma once

#include "experiment/decision/session_report.h"

#include <QList>
#include <QString>

#include <memory>

namespace fp8lab::ui {

class RunAccess;

/// The report's input from runs the views hold: each run's metadata (RunAccess::runInfo; runs
/// without one are left out), titled `title`, for the session file `path` ("" when not saved).
ReportInput reportInputFor(const QList<std::shared_ptr<RunAccess>>& runs, const QString& title, const QString& path,
                           const QString& metric);
/// Reads datasets of those runs (RunAccess::readAll) for the report's advice and what-if tables.
DatasetSource datasetSourceFor(const QList<std::shared_ptr<RunAccess>>& runs);

/// Writes the report to `file`: PDF when its suffix is .pdf (A4 portrait, 2 cm margins, figures at
/// two pixels per point), else HTML. Atomic (QSaveFile: an old file stays until the new one is
/// complete). false with *error: an unknown metric, a file that cannot be written.
bool writeReport(const ReportInput& in, const DatasetSource& read, const QString& file, QString* error);

/// The report of a session file (fp8lab-render --report): opens it with SessionReader and writes
/// writeReport's file.
bool writeSessionReport(const QString& session, const QString& file, const QString& metric, QString* error);

} // namespace fp8lab::ui
