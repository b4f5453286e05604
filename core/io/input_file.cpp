// Reading a user's input file whole, refusing devices and oversized files (input_file.h).
#include "io/input_file.h"

#include "common/number_text.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fp8lab {

std::string byteSizeText(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30)) return decimalText(double(bytes) / double(int64_t(1) << 30), 'f', 1) + " GiB";
  if (bytes >= (int64_t(1) << 20)) return decimalText(double(bytes) / double(int64_t(1) << 20), 'f', 1) + " MiB";
  return std::to_string(bytes) + " bytes";
}

namespace {
/// Reads `fd` to its end, refusing more than max_bytes; `name` names it in messages.
std::optional<std::string> readCapped(int fd, const std::string& what, const std::string& name, int64_t max_bytes,
                                      std::string* error) {
  std::string all;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read " + what + " " + name + ": " + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    if (int64_t(all.size()) + n > max_bytes) {
      *error = what + " " + name + " holds more than " + byteSizeText(max_bytes) + ", the limit; split it";
      return std::nullopt;
    }
    all.append(buf, size_t(n));
  }
  return all;
}
} // namespace

std::optional<std::string> readInputFile(const std::string& path, InputKind kind, const std::string& what,
                                         int64_t max_bytes, std::string* error) {
  if (path == "-") {
    if (kind == InputKind::Config) {
      *error = what + " must be a file, not stdin";
      return std::nullopt;
    }
    return readCapped(STDIN_FILENO, what, "(stdin)", max_bytes, error);
  }
  const std::string quoted = "'" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    *error = what + " " + quoted + ": " + (e == ENOENT ? std::string("no such file") : std::strerror(e));
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = what + " " + quoted + " is a directory";
    return std::nullopt;
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    *error = what + " " + quoted + " is a device, not a file (a device such as /dev/zero never ends)";
    return std::nullopt;
  }
  const bool pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (pipe && kind == InputKind::Config) {
    *error = what + " " + quoted + " is a FIFO or socket, not a regular file";
    return std::nullopt;
  }
  if (!pipe && !S_ISREG(st.st_mode)) {
    *error = what + " " + quoted + " is not a regular file";
    return std::nullopt;
  }
  if (!pipe && st.st_size > max_bytes) {
    *error = what + " " + quoted + " is " + byteSizeText(st.st_size) + "; the limit is " + byteSizeText(max_bytes);
    return std::nullopt;
  }
  int fd = -1;
  do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *error = "cannot read " + what + " " + quoted + ": " + std::strerror(errno);
    return std::nullopt;
  }
  auto all = readCapped(fd, what, quoted, max_bytes, error);
  ::close(fd);
  return all;
}

std::optional<std::vector<std::string_view>> readValueWords(const std::string& path, std::string* storage,
                                                            std::string* error) {
  auto bytes = readInputFile(path, InputKind::Values, "--input", kMaxValuesBytes, error);
  if (!bytes) return std::nullopt;
  *storage = std::move(*bytes);
  std::string_view text = *storage;
  if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3); // a UTF-8 byte order mark
  return valueWords(text);
}

std::optional<std::vector<double>> readNumberFile(const std::string& path, std::string* error) {
  std::string storage;
  const auto words = readValueWords(path, &storage, error);
  if (!words) return std::nullopt;
  std::vector<double> v;
  v.reserve(words->size());
  for (size_t i = 0; i < words->size(); ++i) {
    const auto x = parseNumber((*words)[i]);
    if (!x) {
      *error = "--input '" + path + "': item " + std::to_string(i + 1) + ": " + numberProblem((*words)[i]);
      return std::nullopt;
    }
    v.push_back(*x);
  }
  return v;
}

} // namespace fp8lab
