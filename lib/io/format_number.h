// One number through a printf format ("%.2f", "%.3g", ...), for the tools' text tables; and
// fmt_num, a number for people whatever its value (an infinity, NaN).
#pragma once
#include <algorithm>
#include <cmath>
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

// A number for people: `digits` significant digits, through "%.*g" or, exponent, "%.*e" (always
// d.dde+XX); "0" for zero, "inf" / "-inf" for an infinity, "nan" for NaN. The JSON reports write
// theirs with json_num (runs/run.h): the same "inf" / "-inf", null for NaN.
inline std::string fmt_num(double v, int digits = 3, bool exponent = false) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (v == 0) return "0";
  char buf[40];
  if (exponent) std::snprintf(buf, sizeof buf, "%.*e", std::max(digits - 1, 0), v);
  else std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace lmscope
