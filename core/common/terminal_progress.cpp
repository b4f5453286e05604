// A progress bar on stderr (terminal_progress.h).
#include "common/terminal_progress.h"

#include "common/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fp8lab {

namespace {
/// The length of UTF-8 text in UTF-16 code units (a code point above U+FFFF counts two).
int utf16Length(const std::string& s) {
  int n = 0;
  for (const unsigned char c : s) n += (c & 0xc0) != 0x80 ? ((c & 0xf8) == 0xf0 ? 2 : 1) : 0;
  return n;
}

/// `s` cut to at most `units` UTF-16 code units, at a code point boundary.
std::string cutUtf16(const std::string& s, int units) {
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xc0) == 0x80) continue;
    n += (c & 0xf8) == 0xf0 ? 2 : 1;
    if (n > units) return s.substr(0, i);
  }
  return s;
}
} // namespace

TerminalProgress::TerminalProgress(std::string label) : label_(std::move(label)) {
  tty_ = isatty(fileno(stderr)) != 0;
}

TerminalProgress::~TerminalProgress() {
  finish();
}

void TerminalProgress::update(double fraction, const std::string& detail) {
  if (!tty_) return;
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && fraction < 1.0 && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  // The line must fit the terminal: a wrapped line cannot be redrawn with \r (it scrolls).
  int columns = 80;
  struct winsize ws {};
  if (::ioctl(fileno(stderr), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) columns = ws.ws_col;
  const double f = std::clamp(fraction, 0.0, 1.0);
  const std::string pct = " " + padded(decimalText(100.0 * f, 'f', 1), 5) + "% ";
  const int fixed = utf16Length(label_) + 3 + int(pct.size());   // "label [" + "]" + pct
  const int width = std::clamp(columns - 1 - fixed - 10, 5, 30); // keep ~10 columns for the detail
  const int filled = static_cast<int>(std::lround(f * width));
  std::string line =
      label_ + " [" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "]" + pct + detail;
  line = cutUtf16(line, std::max(0, columns - 1));
  std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void TerminalProgress::finish() {
  if (!tty_ || !drawn_) return;
  std::lock_guard lock(mutex_);
  std::fprintf(stderr, "\n");
  drawn_ = false;
}

} // namespace fp8lab
