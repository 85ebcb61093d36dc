#include "compare/tolerances.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/regular_file.h"
#include "trace/select.h"

namespace lmscope {

// Keep in sync with docs/tolerances.md (the reasoning lives there).
ToleranceTable ToleranceTable::defaults() {
  ToleranceTable t;
  t.rules_ = {
      {"tokens.*", {0, 0}, "token ids, attention mask, positions: integers"},
      {"mask.*", {0, 0}, "0/1 masks and the 0-or-sentinel additive mask"},
      {"embed", {0, 1e-6}, "a row gather: bit-identical up to the float32 store"},
      {"rope.cos", {1e-4, 0}, "float32 angle p*inv_freq: 1 ulp of inv_freq at p<1000 is < 6e-5"},
      {"rope.sin", {1e-4, 0}, "float32 angle p*inv_freq: 1 ulp of inv_freq at p<1000 is < 6e-5"},
      {"layers.*.attn.probs", {1e-5, 1e-4}, "probabilities, scale <= 1"},
      {"logits", {1e-5, 2e-4}, "every layer's rounding plus a D-long dot per entry"},
      {"lens.layers.*.logits", {1e-5, 2e-4}, "the head on a layer's residual stream: as logits"},
      {"lens.layers.*.topk_ids", {0, 0}, "token ids"},
      {"lens.layers.*.topk_probs", {1e-5, 1e-4}, "probabilities, scale <= 1"},
      {"sample.candidates", {0, 0}, "token ids"},
      {"sample.kept", {0, 0}, "0/1 flags"},
      {"sample.survivors", {0, 0}, "counts"},
      {"sample.chosen", {0, 0}, "token ids"},
      {"sample.finished", {0, 0}, "0/1 flags"},
      {"sample.u", {0, 0}, "the same uniform draw, or -1 when greedy"},
      {"sample.probs", {1e-5, 1e-4}, "probabilities, scale <= 1"},
      {"sample.*", {1e-5, 2e-4}, "logits after penalty/temperature: as logits"},
      {"grad.*", {1e-5, 2e-4}, "gradients (docs/tolerances.md, Gradients): the backward's rounding too"},
      {"*", {1e-5, 1e-4}, "float32 activations: summation order differs (BLAS vs torch)"},
  };
  return t;
}

void ToleranceTable::add_override(const std::string& pattern, Tolerance tol, const std::string& why) {
  rules_.insert(rules_.begin(), ToleranceRule{pattern, tol, why});
}

void ToleranceTable::load_overrides(const std::string& json_path) {
  auto bad = [&](const std::string& why) {
    throw std::runtime_error("bad tolerance file '" + json_path + "': " + why);
  };
  std::string text;
  try {
    text = read_regular_file(json_path, "tolerance file");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("bad ") + e.what());
  }
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    bad(msg.substr(0, msg.find('\n')));
  }
  if (!j.is_object()) bad("expected an object {\"pattern\": {\"atol\": x, \"rtol\": y}}");
  std::vector<ToleranceRule> added;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (!v.is_object()) bad("'" + it.key() + "' must map to {\"atol\": x, \"rtol\": y}");
    Tolerance tol;
    for (auto f = v.begin(); f != v.end(); ++f) {
      if (!f.value().is_number() || f.value().get<double>() < 0)
        bad("'" + it.key() + "." + f.key() + "' must be a number >= 0");
      if (f.key() == "atol") tol.atol = f.value().get<double>();
      else if (f.key() == "rtol") tol.rtol = f.value().get<double>();
      else bad("unknown field '" + f.key() + "' for '" + it.key() + "' (atol, rtol)");
    }
    added.push_back({it.key(), tol, "from " + json_path});
  }
  rules_.insert(rules_.begin(), added.begin(), added.end());
}

const ToleranceRule& ToleranceTable::rule_for(const std::string& hook) const {
  for (const ToleranceRule& r : rules_)
    if (glob_match(r.pattern, hook)) return r;
  static const ToleranceRule exact{"(none)", {0, 0}, "no rule matched: exact"};
  return exact;
}

}  // namespace lmscope
