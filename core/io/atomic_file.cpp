// FP8 Lab — atomic file replacement (atomic_file.h).
#include "io/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace fp8lab {

namespace fs = std::filesystem;
using C = Issue::Code;

Status writeFileAtomically(const std::string& path, const std::vector<unsigned char>& out) {
  Status st;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string hidden = ".";
  hidden += target.filename().string();
  hidden += ".tmp-XXXXXX";
  std::string templ = (dir / hidden).string();
  const int fd = ::mkstemp(templ.data());
  if (fd < 0) {
    st.add(C::WriteFailed, path, std::string("cannot create a temporary file beside it: ") + std::strerror(errno));
    return st;
  }
  size_t done = 0;
  bool ok = true;
  while (done < out.size()) {
    const ssize_t w = ::write(fd, out.data() + done, out.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(w);
  }
  const int err = errno;
  ok = ok && ::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(templ.c_str(), path.c_str()) != 0) {
    st.add(C::WriteFailed, path, std::string("cannot write it: ") + std::strerror(ok ? errno : err));
    ::unlink(templ.c_str());
    return st;
  }
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return st;
}

} // namespace fp8lab
