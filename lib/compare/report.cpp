#include "compare/report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "io/format_number.h"
#include "trace/hooks.h"

namespace lmscope {

namespace {

// 3 significant digits, always with an exponent (1.23e-04), "0", "inf" / "-inf".
std::string sci(double v) { return fmt_num(v, 3, /*exponent=*/true); }

// How close to failing: max_abs / bound (inf when the bound is 0 and anything differs).
double badness(const HookResult& r) {
  if (r.kind != HookResult::Kind::Compared) return INFINITY;
  double b = r.bound();
  double x = b > 0 ? r.m.max_abs / b : (r.m.max_abs > 0 ? INFINITY : 0);
  return r.pass ? x : x + 1e300;   // any failing step is worse than every passing one
}

// {0,1,2,3,7} -> "0-3,7"
std::string ranges(const std::vector<int>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(steps[i]);
    if (j > i) {
      s += '-';   // appended apart: `"-" + to_string()` trips GCC 12's bogus -Wrestrict
      s += std::to_string(steps[j]);
    }
    i = j + 1;
  }
  return s;
}

std::string row(const std::string& hook, const std::string& steps, const HookResult& r, bool say_step) {
  char buf[512];
  std::string result = r.pass ? "PASS" : "FAIL";
  if (r.kind == HookResult::Kind::MissingInA) {
    std::snprintf(buf, sizeof buf, "%-28s %-8s %-9s %-9s %-11s %-9s FAIL (missing in A at step %d)\n",
                  hook.c_str(), steps.c_str(), "-", "-", "-", "-", r.step);
    return buf;
  }
  if (r.kind == HookResult::Kind::ShapeMismatch) {
    std::snprintf(buf, sizeof buf, "%-28s %-8s %-9s %-9s %-11s %-9s FAIL (step %d: %s)\n", hook.c_str(),
                  steps.c_str(), "-", "-", "-", "-", r.step, r.note.c_str());
    return buf;
  }
  if (!r.pass && say_step) result += " (step " + std::to_string(r.step) + (r.note.empty() ? "" : ": " + r.note) + ")";
  else if (!r.pass && !r.note.empty()) result += " (" + r.note + ")";
  char cos[32];
  std::snprintf(cos, sizeof cos, "%.8f", r.m.cosine);
  std::snprintf(buf, sizeof buf, "%-28s %-8s %-9s %-9s %-11s %-9s %s\n", hook.c_str(), steps.c_str(),
                sci(r.m.max_abs).c_str(), sci(r.m.rel).c_str(), cos, sci(r.bound()).c_str(), result.c_str());
  return buf;
}

}  // namespace

std::string report_text(const CompareReport& rep, bool all_steps) {
  std::string out = "A:         " + rep.path_a + "\nreference: " + rep.path_ref + "\n";
  char head[256];
  std::snprintf(head, sizeof head, "%-28s %-8s %-9s %-9s %-11s %-9s %s\n", "hook", all_steps ? "step" : "steps",
                "max_abs", "rel", "cosine", "tol", "result");
  out += head;
  if (all_steps) {
    for (const HookResult& r : rep.results) out += row(r.hook, std::to_string(r.step), r, false);
  } else {
    // Aggregate per hook name; rows in forward order of the hook names.
    std::map<std::string, std::vector<const HookResult*>> by_key;
    for (const HookResult& r : rep.results) by_key[hook_sort_key(r.hook) + "\x01" + r.hook].push_back(&r);
    for (const auto& [key, rs] : by_key) {
      const HookResult* worst = rs.front();
      std::vector<int> steps;
      for (const HookResult* r : rs) {
        steps.push_back(r->step);
        if (badness(*r) > badness(*worst)) worst = r;
      }
      out += row(worst->hook, ranges(steps), *worst, true);
    }
  }
  out += "(tol = atol + rtol * max|reference|; rel = max_abs / max|reference|)\n";
  std::map<std::string, std::vector<int>> only;
  for (const StepHook& s : rep.only_in_a) only[s.hook].push_back(s.step);
  for (const auto& [hook, steps] : only) out += "only in A (not compared): " + hook + " (steps " + ranges(steps) + ")\n";
  if (!rep.generated_equal) out += "generated_ids differ: " + rep.generated_note + "\n";
  if (rep.first_failure) {
    const HookResult& f = rep.results[*rep.first_failure];
    out += "first failing hook: step " + std::to_string(f.step) + " " + f.hook + " (" + f.reason() + ")\n";
  } else if (rep.pass) {
    out += "all " + std::to_string(rep.hook_names()) + " hooks pass (" + std::to_string(rep.results.size()) +
           " step-hook comparisons)\n";
  } else {
    out += "all " + std::to_string(rep.hook_names()) + " hooks pass, but generated_ids differ\n";
  }
  return out;
}

std::string report_json(const CompareReport& rep) {
  using json = nlohmann::ordered_json;   // keys in the documented order
  auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };  // JSON has no inf
  json hooks = json::array();
  for (const HookResult& r : rep.results) {
    if (r.kind == HookResult::Kind::MissingInA) continue;   // listed in missing_in_a
    json h = {{"step", r.step},          {"hook", r.hook},       {"max_abs", number(r.m.max_abs)},
              {"rel", number(r.m.rel)},  {"cosine", r.m.cosine}, {"atol", r.tol.atol},
              {"rtol", r.tol.rtol},      {"pass", r.pass},       {"compared", r.m.compared},
              {"scale", r.m.scale},      {"tol_rule", r.tol_pattern}};
    if (!r.argmax_index.empty()) h["index"] = r.argmax_index;
    if (!r.note.empty()) h["note"] = r.note;
    hooks.push_back(h);
  }
  auto list = [](const std::vector<StepHook>& v) {
    json a = json::array();
    for (const StepHook& s : v) a.push_back({{"step", s.step}, {"hook", s.hook}});
    return a;
  };
  json first = nullptr;
  if (rep.first_failure) {
    const HookResult& f = rep.results[*rep.first_failure];
    first = {{"step", f.step}, {"hook", f.hook}, {"reason", f.reason()}, {"max_abs", number(f.m.max_abs)}};
    if (!f.argmax_index.empty()) first["index"] = f.argmax_index;
  }
  // Hook names and notes echo the traces' own attributes, which need not be UTF-8: invalid
  // bytes become U+FFFD instead of an exception.
  auto dump = [](const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); };
  // One object; laid out one hook per line so that it stays readable (and grep-able) with
  // thousands of (step, hook) entries.
  std::string out = "{\"pass\": " + dump(json(rep.pass)) + ",\n \"first_failure\": " + dump(first) + ",\n \"hooks\": [";
  for (size_t i = 0; i < hooks.size(); ++i) out += (i ? ",\n  " : "\n  ") + dump(hooks[i]);
  out += hooks.empty() ? "],\n" : "\n ],\n";
  out += " \"missing_in_a\": " + dump(list(rep.missing_in_a)) + ",\n";
  out += " \"only_in_a\": " + dump(list(rep.only_in_a)) + ",\n";
  out += " \"generated_equal\": " + dump(json(rep.generated_equal));
  if (!rep.generated_note.empty()) out += ",\n \"generated_note\": " + dump(json(rep.generated_note));
  return out + "}";
}

}  // namespace lmscope
