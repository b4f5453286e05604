// Refusing session outputs a save could not write (output_check.h).
#include "session/output_check.h"

#include "session/session.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fp8lab {

namespace {
/// The absolute, cleaned directory of `path` (relative paths from the working directory; no
/// ".", "..", repeated or trailing "/"): "/" for a file at the root, "x" itself for "x/".
std::string absoluteDirectory(const std::string& path) {
  std::string abs = path;
  if (abs.empty() || abs[0] != '/') {
    char cwd[PATH_MAX];
    abs = std::string(::getcwd(cwd, sizeof cwd) ? cwd : "") + "/" + abs;
  }
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= abs.size()) {
    const size_t j = std::min(abs.find('/', i), abs.size());
    const std::string part = abs.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".")
      parts.push_back(part);
    i = j + 1;
  }
  if (!parts.empty() && (path.empty() || path.back() != '/')) parts.pop_back(); // the file name ("dir/" names none)
  std::string dir;
  for (const std::string& p : parts) dir += "/" + p;
  return dir.empty() ? "/" : dir;
}
} // namespace

std::string sessionOutputProblem(const std::string& out) {
  const std::string dir = absoluteDirectory(out);
  struct stat st {
  }, dst{};
  const bool exists = ::stat(out.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return "--out " + out + " is a directory";
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
    return "the directory of --out " + out + " does not exist";
  if (exists && !S_ISREG(st.st_mode))
    return "--out " + out + " is not a regular file (a device, FIFO or socket); a session is a regular file";
  if (exists && ((st.st_mode & 0222) == 0 || ::access(out.c_str(), W_OK) != 0))
    return out + " is read-only (the session is kept as it is; choose another --out)";
  if (exists && ::access(out.c_str(), R_OK) == 0) {
    if (st.st_size == 0)
      return out + " exists and is empty, not an HDF5 session (runs are appended to a session; choose another --out)";
    if (!hasHdf5Signature(out))
      return out + " exists and is not an HDF5 session (runs are appended to a session; choose another --out)";
    // The save's own check (the session reader: root attributes and the runs' metadata, no
    // dataset values), so a file the save would refuse is refused here, before the work.
    const auto r = SessionReader::open(out);
    for (const Issue& i : r.issues)
      if (i.severity == Severity::Error)
        return out + " exists and cannot take runs: " + i.detail +
               " (runs are appended to an FP8 Lab session; choose another --out)";
  }
  // The save creates a temporary file beside the target: try it (permission bits alone say
  // nothing for root, nor for /proc, /sys or a read-only mount).
  std::string probe = dir + "/.fp8lab-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0)
    return "cannot create files in " + dir + " (" + std::strerror(errno) +
           "; a save writes a temporary file there, then renames it)";
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

} // namespace fp8lab
