// FP8 Lab — a progress bar on the terminal (stderr) for long commands.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace fp8lab {

/// Progress on a terminal: one line on stderr, "label [####....]  42.0% detail", redrawn with
/// \r at most 10 times a second and cut to the terminal's width (TIOCGWINSZ; 80 columns when
/// unknown) so it never wraps; silent when stderr is not a terminal. Widths count UTF-16 code
/// units of the UTF-8 label and detail. Thread-safe.
class TerminalProgress {
public:
  explicit TerminalProgress(std::string label);
  ~TerminalProgress();
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;
  /// `fraction` in [0, 1] (clamped); `detail` follows the percentage.
  void update(double fraction, const std::string& detail = {});
  /// Ends the line (a newline) if one was drawn.
  void finish();

private:
  std::string label_;
  bool tty_ = false;
  bool drawn_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
};

} // namespace fp8lab
