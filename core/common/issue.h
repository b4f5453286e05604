// FP8 Lab — the one finding type: what sessions, importers, runs, backends and the GUI's Issues
// dock report (a severity, a short title, where, and the detail).
#pragma once

#include <string>

namespace fp8lab {

/// How serious a finding is. Error: the operation did not do what was asked (a load or save
/// failed, a run stopped); Warning: it did, but a result deserves a look (saturation, a GPU
/// fallback); Info: worth knowing (which kernel ran, a padded shape).
enum class Severity { Info, Warning, Error };

/// "info", "warning" or "error".
const char* severityName(Severity s);

/// A finding: what happened, where, and the detail. Sessions and importers fill `code` (what kind
/// of file problem); computations leave it at Computation and give a short `what` instead, for
/// example {Severity::Warning, "saturated", "layer1/input", "1532 of 100352 elements (1.5%)"}.
struct Issue {
  enum class Code {
    Computation,      ///< a finding of the computation that produced a result (quantizer, GEMM, backend)
    NotFound,         ///< the file (or run, dataset, tensor) does not exist
    NotHdf5,          ///< not an HDF5 file at all (no HDF5 signature)
    Corrupt,          ///< an HDF5 file the library cannot read (truncated, damaged)
    ForeignFile,      ///< a valid HDF5 file that is not an FP8 Lab session (no application attr)
    FutureVersion,    ///< format_version newer than this build understands
    MissingGroup,     ///< a required group is absent (e.g. /runs)
    MissingDataset,   ///< a required or requested dataset is absent
    MissingAttribute, ///< a required attribute is absent
    WrongShape,       ///< a dataset's rank or dimensions are not what the layout says
    WrongType,        ///< a dataset or attribute has an unexpected element type
    InvalidArgument,  ///< caller error: bad run id, region outside the dataset, size mismatch
    DuplicateRun,     ///< a run id already exists
    WriteFailed,      ///< cannot create / write / fsync / rename the output (previous file kept)
    MalformedInput,   ///< importer: malformed header, wrong dtype, truncated data, bad size
    Hdf5Error,        ///< any other error reported by the HDF5 library (detail has its message)
    PermissionDenied, ///< the file exists but this user may not read it (or reach it: EACCES)
    Locked,           ///< another process holds the session's writer lock (session_lock.h)
  };

  Severity severity = Severity::Warning;
  std::string what;   ///< short title ("saturated", "GPU fallback"); empty: the code's name
  std::string where;  ///< file path (plus "#/runs/<id>/<dataset>" inside a session), operand or field
  std::string detail; ///< human-readable explanation, including a library's message if any
  Code code = Code::Computation;

  /// A file problem of a session or importer (what = the code's name).
  static Issue file(Code code, std::string where, std::string detail, Severity severity = Severity::Error);

  /// `what`, or the code's name when `what` is empty ("wrong shape").
  std::string title() const;
  /// One line: "error: wrong shape at FILE#/runs/r1/output/D: expected [64,64], found [64]".
  std::string toString() const;
};

/// Short lowercase name of a code ("missing dataset", "future format version", ...).
const char* codeName(Issue::Code c);

} // namespace fp8lab
