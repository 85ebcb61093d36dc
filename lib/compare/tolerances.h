// Per-hook tolerances for trace comparison: a table of glob pattern -> (atol, rtol), first
// match wins. A hook passes iff max_abs <= atol + rtol * scale, scale = max |reference|
// over the compared elements. Defaults and their justification: docs/tolerances.md.
#pragma once
#include <string>
#include <vector>

namespace lmscope {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  double bound(double scale) const { return atol + rtol * scale; }
};

struct ToleranceRule {
  std::string pattern;   // glob (trace/select.h): `*` any run, `?` one character
  Tolerance tol;
  std::string why;       // one line, shown by docs and --json
};

class ToleranceTable {
 public:
  static ToleranceTable defaults();   // float32 engine vs HF float32 on CPU

  // Rules from a JSON file {"pattern": {"atol": x, "rtol": y}, ...} (a missing field is 0),
  // checked before every existing rule, in file order. Throws one line on a bad file.
  void load_overrides(const std::string& json_path);
  void add_override(const std::string& pattern, Tolerance tol, const std::string& why = "override");

  // The first rule whose pattern matches the hook; a table without a `*` rule gives exact.
  const ToleranceRule& rule_for(const std::string& hook) const;
  Tolerance lookup(const std::string& hook) const { return rule_for(hook).tol; }
  const std::vector<ToleranceRule>& rules() const { return rules_; }

 private:
  std::vector<ToleranceRule> rules_;
};

}  // namespace lmscope
