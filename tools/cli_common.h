// Small helpers shared by the command-line tools.
#pragma once
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokenizer/ids_text.h"

namespace lmscope::cli {

using ::lmscope::join_ids;    // tokenizer/ids_text.h: the one "1,2,3" format
using ::lmscope::parse_ids;

inline std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool quote = a.find_first_of(" \t'\"*?") != std::string::npos;
    s += (i ? " " : "") + (quote ? "'" + a + "'" : a);
  }
  return s;
}

// Runs a tool body; any exception becomes one line on stderr and exit code 1.
template <class F>
int run_tool(const char* tool, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "%s: error: %s\n", tool, msg.c_str());
    return 1;
  }
}

}  // namespace lmscope::cli
