// --intervene SPEC (repeatable) and --interventions FILE.json: the intervention options every
// tool that runs the model shares (grammar: intervene/spec.h, docs/interventions.md).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "intervene/interventions.h"
#include "intervene/spec.h"

namespace lmscope::cli {

struct InterventionArgs {
  std::vector<std::string> specs;
  std::string file;

  void add_to(CLI::App& app) {
    app.add_option("--intervene", specs,
                   "edit the forward at a hook point: SITE[SELECTORS]=OP, e.g. 'layers.3.attn.z[head=2]=zero', "
                   "'layers.6.resid_pre=add(4, love.h5 - hate.h5)' (repeatable; docs/interventions.md)");
    app.add_option("--interventions", file, "a JSON array of interventions (objects or SPEC strings)");
  }
  // The specs as given, checked for grammar only (std::invalid_argument / runtime_error: one line).
  std::vector<InterventionSpec> parse() const {
    std::vector<InterventionSpec> out;
    if (!file.empty()) out = load_interventions_file(file);
    for (const std::string& s : specs) out.push_back(parse_intervention(s));
    return out;
  }
  // Checked against the model and ready to run; null when none was asked for.
  std::unique_ptr<Interventions> build(const ModelConfig& cfg) const {
    std::vector<InterventionSpec> all = parse();
    if (all.empty()) return nullptr;
    return std::make_unique<Interventions>(std::move(all), cfg);
  }
};

}  // namespace lmscope::cli
