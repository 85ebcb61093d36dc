// lmscope-diff A.h5 B.h5: compares trace A against the reference trace B (docs/tolerances.md).
// Exit status: 0 all pass, 1 a comparison failed, 2 bad input (always one line on stderr).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>

#include "compare/compare.h"
#include "compare/report.h"
#include "trace/select.h"
#include "trace/trace_reader.h"

int main(int argc, char** argv) {
  using namespace lmscope;
  CLI::App app{"Compare trace A against reference trace B, hook by hook (B is the reference)"};
  std::string path_a, path_b, tol_file, hooks, steps;
  bool json = false, all = false;
  app.add_option("A", path_a, "trace to check")->required();
  app.add_option("B", path_b, "reference trace")->required();
  app.add_flag("--json", json, "print one JSON object instead of the table");
  app.add_option("--tolerances", tol_file, "JSON {\"glob\": {\"atol\": x, \"rtol\": y}} checked before the defaults");
  app.add_option("--hooks", hooks, "comma-separated globs of hook names (* matches dots too)");
  app.add_option("--steps", steps, "steps to compare, e.g. 0-3,7");
  app.add_flag("--all", all, "one line per (step, hook) instead of per hook");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "lmscope-diff: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  CompareOptions opts;
  std::unique_ptr<TraceReader> a, b;
  try {
    if (!tol_file.empty()) opts.tolerances.load_overrides(tol_file);
    if (!hooks.empty()) opts.hook_globs = split_list(hooks);
    if (!steps.empty()) opts.steps = parse_ranges(steps);
    a = std::make_unique<TraceReader>(path_a);
    b = std::make_unique<TraceReader>(path_b);
  } catch (const std::exception& e) {
    std::cerr << "lmscope-diff: error: " << e.what() << "\n";
    return 2;
  }
  CompareReport rep;
  try {
    rep = compare_traces(*a, *b, opts);
  } catch (const std::exception& e) {
    // A trace that opened but cannot be read through (a corrupt dataset) is bad input too.
    std::cerr << "lmscope-diff: error: " << e.what() << "\n";
    return 2;
  }
  std::cout << (json ? report_json(rep) + "\n" : report_text(rep, all));
  std::cout.flush();
  return rep.pass ? 0 : 1;
}
