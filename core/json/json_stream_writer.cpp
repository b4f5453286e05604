// Compact JSON written as a stream (json_stream_writer.h).
#include "json/json_stream_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace fp8lab {

void JsonStreamWriter::key(const char* k) {
  sep();
  buf_ += '"';
  buf_ += k;
  buf_ += "\":";
  after_key_ = true;
}

void JsonStreamWriter::value(double v) {
  sep();
  if (std::isnan(v))
    buf_ += "\"nan\"";
  else if (std::isinf(v))
    buf_ += v > 0 ? "\"inf\"" : "\"-inf\"";
  else if (v == 0)
    buf_ += std::signbit(v) ? "-0.0" : "0";
  else {
    char tmp[40];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
}

void JsonStreamWriter::value(const std::string& s) {
  sep();
  buf_ += '"';
  for (const unsigned char c : s) {
    switch (c) {
    case '"':
      buf_ += "\\\"";
      break;
    case '\\':
      buf_ += "\\\\";
      break;
    case '\n':
      buf_ += "\\n";
      break;
    case '\t':
      buf_ += "\\t";
      break;
    case '\r':
      buf_ += "\\r";
      break;
    default:
      if (c < 0x20) {
        char u[8];
        std::snprintf(u, sizeof u, "\\u%04x", c);
        buf_ += u;
      } else
        buf_ += static_cast<char>(c);
    }
  }
  buf_ += '"';
}

} // namespace fp8lab
