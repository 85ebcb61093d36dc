// Small helpers shared by the command-line tools.
#pragma once
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/omp_waits.h"
#include "io/hdf5_deadline.h"
#include "tokenizer/ids_text.h"

namespace lmscope::cli {

using ::lmscope::join_ids;    // tokenizer/ids_text.h: the one "1,2,3" format
using ::lmscope::parse_ids;

inline std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool quote = a.find_first_of(" \t'\"*?") != std::string::npos;
    if (i) s += ' ';
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

// A usage error: one line "<tool>: error: <what> (see --help)" on stderr, exit code 2.
inline int usage_error(const char* tool, std::string what) {
  for (char& c : what)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "%s: error: %s (see --help)\n", tool, what.c_str());
  return 2;
}

// Parses the command line (in place of CLI11_PARSE, whose errors are two lines without the
// tool's name and exit 104/105...). nullopt: go on; otherwise the tool's exit code: 0 after
// --help, 2 after a usage error. Also names the tool in the HDF5 read deadline's line.
// Every tool parses first, before any parallel region: where OpenMP's waits are settled
// (backend/cpu/omp_waits.h; it may execute the tool again with GOMP_SPINCOUNT set).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const char* tool) {
  cpu::settle_openmp_waits(argv);
  h5::set_read_deadline_tool(tool, 1);   // a libhdf5 read past its deadline: "<tool>: error: ..."
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(tool, e.what());
  }
  return std::nullopt;
}

// For a float option: refuses what is not a finite number within float range (1e39, inf, nan),
// which would otherwise become inf or nan silently.
inline CLI::Validator finite_float() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const char* b = s.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(b, &end);
        if (end == b || *end) return "";   // not a number at all: the conversion says so
        if (!std::isfinite(v) || std::fabs(v) > FLT_MAX || errno == ERANGE)
          return "value " + s + " is not a finite number within float range";
        return "";
      },
      "FINITE");
}

// For an option naming a file to write: an empty path is a usage error (it was ignored). The
// target itself is checked by the writer (io/output_target.h).
inline CLI::Validator output_path() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "an empty path names no file" : ""; },
                        "FILE");
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
