// FP8 Lab — names and one-line text of findings.
#include "common/issue.h"

namespace fp8lab {

const char* severityName(Severity s) {
  switch (s) {
  case Severity::Info:
    return "info";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "?";
}

const char* codeName(Issue::Code c) {
  using C = Issue::Code;
  switch (c) {
  case C::Computation:
    return "computation";
  case C::NotFound:
    return "not found";
  case C::NotHdf5:
    return "not an HDF5 file";
  case C::Corrupt:
    return "corrupt file";
  case C::ForeignFile:
    return "not an FP8 Lab session";
  case C::FutureVersion:
    return "future format version";
  case C::MissingGroup:
    return "missing group";
  case C::MissingDataset:
    return "missing dataset";
  case C::MissingAttribute:
    return "missing attribute";
  case C::WrongShape:
    return "wrong shape";
  case C::WrongType:
    return "wrong type";
  case C::InvalidArgument:
    return "invalid argument";
  case C::DuplicateRun:
    return "duplicate run";
  case C::WriteFailed:
    return "write failed";
  case C::MalformedInput:
    return "malformed input";
  case C::Hdf5Error:
    return "HDF5 error";
  case C::PermissionDenied:
    return "permission denied";
  case C::Locked:
    return "locked by another writer";
  }
  return "?";
}

Issue Issue::file(Code code, std::string where, std::string detail, Severity severity) {
  Issue i;
  i.severity = severity;
  i.where = std::move(where);
  i.detail = std::move(detail);
  i.code = code;
  return i;
}

std::string Issue::title() const {
  return what.empty() ? std::string(codeName(code)) : what;
}

std::string Issue::toString() const {
  std::string s = severityName(severity);
  s += ": ";
  s += title();
  if (!where.empty()) s += " at " + where;
  if (!detail.empty()) s += ": " + detail;
  return s;
}

} // namespace fp8lab
