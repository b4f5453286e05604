// libFuzzer target: the CLI number parser (app/cli parseNumber / parseNumberList). Any text gives
// a value or nullopt; a value must round-trip: printing it with %.17g (or as inf / nan) and
// parsing that again gives the same bits (NaN: any NaN).
#include "cli_util.h"

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace fp8lab::cli;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const QString text = QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  const auto v = parseNumber(text);
  if (v) {
    char buf[64];
    if (std::isnan(*v))
      std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(*v))
      std::snprintf(buf, sizeof buf, *v > 0 ? "inf" : "-inf");
    else
      std::snprintf(buf, sizeof buf, "%.17g", *v);
    const auto again = parseNumber(QString::fromLatin1(buf));
    if (!again) __builtin_trap();
    if (std::isnan(*v) != std::isnan(*again)) __builtin_trap();
    if (!std::isnan(*v) && std::memcmp(&*v, &*again, sizeof(double)) != 0) __builtin_trap();
  }
  QString problem;
  const auto list = parseNumberList(text, &problem);
  if (!list && problem.isEmpty()) {
    // nullopt must say why (an empty text is a valid empty list)
    __builtin_trap();
  }
  return 0;
}
