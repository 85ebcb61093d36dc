// One number through a printf format ("%.2f", "%.3g", ...), for the tools' text tables.
#pragma once
#include <cstdio>
#include <string>

namespace lmscope {

// A value that rounds to zero prints without a sign: -0.003 through "%.2f" is "0.00", not
// "-0.00". Whether a tiny value lands just below or just above zero depends on the order a
// float32 sum was added in (the CPU kernel, OpenBLAS's sgemm kernel), so the sign of a printed
// zero differs between machines; the number itself does not (docs/tolerances.md).
inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  std::string s = buf;
  const size_t minus = s.find('-');
  if (minus != std::string::npos) {
    const size_t digits = s.find_first_of("0123456789", minus);
    const size_t end = s.find_first_not_of("0123456789.", digits);   // the mantissa's end (e, a space, %)
    const std::string mantissa = digits == std::string::npos ? "" : s.substr(digits, end == std::string::npos ? end : end - digits);
    if (!mantissa.empty() && mantissa.find_first_not_of("0.") == std::string::npos) s.erase(minus, 1);
    else if (s.compare(minus, 4, "-nan") == 0) s.erase(minus, 1);
  }
  return s;
}

}  // namespace lmscope
