// One number through a printf format ("%.2f", "%.3g", ...), for the tools' text tables.
#pragma once
#include <cstdio>
#include <string>

namespace lmscope {

inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace lmscope
