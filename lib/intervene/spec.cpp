#include "intervene/spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/regular_file.h"

namespace lmscope {

namespace {

// A site as a spec writes it: a global hook by its name ("embed", "logits"), a per-layer hook
// by its name after "layers.L." ("attn.z"). The sites are the hook table's editable hooks
// (HookInfo::editable, trace/hooks.h).
std::string site_short_name(Hook h) {
  const std::string generic = hook_generic_name(h);
  return hook_info(h).per_layer ? generic.substr(std::string("layers.L.").size()) : generic;
}

[[noreturn]] void bad(const std::string& spec, const std::string& what) {
  throw std::invalid_argument("intervention '" + spec + "': " + what);
}

bool parse_int(const std::string& s, int64_t& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (*end || errno == ERANGE) return false;
  v = x;
  return true;
}

double parse_number(const std::string& spec, const std::string& s, const std::string& what) {
  const std::string t = trim_blanks(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end || errno == ERANGE || !std::isfinite(v))
    bad(spec, what + " '" + t + "' is not a finite number");
  // The edit multiplies float32 tensors: 1e39 is a finite double and an infinite float.
  if (!std::isfinite(float(v))) bad(spec, what + " '" + t + "' is past float32's range (3.4e38)");
  return v;
}

// A trace file (.h5), or the label of a run held in memory (the Python module's caches).
bool is_trace_name(const std::string& s) {
  return (s.size() > 3 && s.compare(s.size() - 3, 3, ".h5") == 0) || s == kMemoryRunLabel;
}

// The axis a selector picks on, beside pos, row and step (B and T, which every site has).
const char* selector_axis(const std::string& sel) {
  if (sel == "head") return "H";      // or Hkv
  if (sel == "neuron") return "F";
  if (sel == "key") return "S";
  return nullptr;
}

// A selector name and the hooks it applies to: those with its axis.
bool selector_applies(const std::string& sel, Hook h) {
  if (sel == "pos" || sel == "row" || sel == "step") return true;
  const char* axis = selector_axis(sel);
  if (!axis) return false;
  return hook_axis(h, axis) >= 0 || (sel == "head" && hook_axis(h, "Hkv") >= 0);
}

// "attn.q, attn.k, ...": the sites a selector applies to, for its one-line error.
std::string sites_with_selector(const std::string& sel) {
  std::string out;
  for (Hook h : editable_hooks())
    if (selector_applies(sel, h)) out += (out.empty() ? "" : ", ") + site_short_name(h);
  return out;
}

IndexSet* selector_field(InterventionSpec& s, const std::string& sel) {
  if (sel == "head") return &s.head;
  if (sel == "pos") return &s.pos;
  if (sel == "row") return &s.row;
  if (sel == "step") return &s.step;
  if (sel == "neuron") return &s.neuron;
  if (sel == "key") return &s.key;
  return nullptr;
}

void set_selector(InterventionSpec& s, const std::string& spec, const std::string& sel, const std::string& value) {
  IndexSet* field = selector_field(s, sel);
  if (!field) bad(spec, "unknown selector '" + sel + "' (selectors: head, pos, row, step, neuron, key)");
  if (!selector_applies(sel, s.hook))
    bad(spec, "selector '" + sel + "' does not apply to " + site_short_name(s.hook) + " (" + sel + ": " +
                  sites_with_selector(sel) + ")");
  if (!field->all()) bad(spec, "selector '" + sel + "' given twice");
  try {
    *field = parse_index_set(value, sel, sel == "pos" || sel == "key");
  } catch (const std::invalid_argument& e) {
    bad(spec, e.what());
  }
  if (field->all()) bad(spec, "selector '" + sel + "' is empty");
}

// "layers.3.attn.z" / "embed" -> hook and layers.
void parse_site(InterventionSpec& s, const std::string& spec, const std::string& site) {
  auto unknown = [&] {
    std::string names;
    for (const std::string& n : intervention_site_names()) {
      if (!names.empty()) names += ", ";
      names += n;
    }
    bad(spec, "unknown site '" + site + "' (sites: " + names + ")");
  };
  const auto is_site = [](Hook h, bool per_layer) {
    return hook_info(h).editable && hook_info(h).per_layer == per_layer;
  };
  if (const auto global = parse_hook_name(site); global && is_site(global->id, false)) {
    s.hook = global->id;
    return;
  }
  if (site.rfind("layers.", 0) != 0) unknown();
  const size_t dot = site.find('.', 7);
  if (dot == std::string::npos) unknown();
  const std::string layers = site.substr(7, dot - 7), name = site.substr(dot + 1);
  const auto per_layer = parse_hook_name("layers.0." + name);
  if (!per_layer || !is_site(per_layer->id, true)) unknown();
  s.hook = per_layer->id;
  if (layers == "*") return;
  try {
    s.layers = parse_index_set(layers, "layer", false);
  } catch (const std::invalid_argument& e) {
    bad(spec, e.what());
  }
}

// "add(4, a.h5 - b.h5)", "add(4, a.h5 - b.h5, aligned)" -> op and arguments.
void parse_op(InterventionSpec& s, const std::string& spec, const std::string& text) {
  std::string name = text, args;
  bool has_args = false;
  const size_t open = text.find('(');
  if (open != std::string::npos) {
    if (text.back() != ')') bad(spec, "op '" + text + "': missing ')'");
    name = trim_blanks(text.substr(0, open));
    args = trim_blanks(text.substr(open + 1, text.size() - open - 2));
    has_args = true;
  }
  auto no_args = [&] {
    if (has_args && !args.empty()) bad(spec, "op '" + name + "' takes no arguments");
  };
  if (name == "zero") {
    s.op = EditOp::Zero;
    no_args();
  } else if (name == "mean") {
    s.op = EditOp::Mean;
    if (!args.empty()) {
      if (!is_trace_name(args)) bad(spec, "mean(" + args + "): the reference must be a trace (.h5)");
      s.source = args;
    }
  } else if (name == "patch") {
    s.op = EditOp::Patch;
    if (!is_trace_name(args)) bad(spec, "patch needs the trace to take values from: patch(clean.h5)");
    s.source = args;
  } else if (name == "scale") {
    s.op = EditOp::Scale;
    if (args.empty()) bad(spec, "scale needs a factor: scale(0.5)");
    s.c = parse_number(spec, args, "scale factor");
  } else if (name == "add") {
    s.op = EditOp::Add;
    const size_t comma = args.find(',');
    if (comma == std::string::npos)
      bad(spec, "add needs a coefficient and a vector: add(4, steer.json) or add(4, a.h5 - b.h5)");
    s.c = parse_number(spec, args.substr(0, comma), "add coefficient");
    std::string what = trim_blanks(args.substr(comma + 1));
    const size_t second = what.rfind(',');
    if (second != std::string::npos) {
      const std::string mode = trim_blanks(what.substr(second + 1));
      if (mode != "aligned")
        bad(spec, "add: unknown third argument '" + mode + "' (add(c, a.h5 - b.h5, aligned) adds A - B position by position)");
      s.aligned = true;
      what = trim_blanks(what.substr(0, second));
    }
    const size_t minus = what.find(" - ");
    if (minus != std::string::npos) {
      s.source = trim_blanks(what.substr(0, minus));
      s.minus = trim_blanks(what.substr(minus + 3));
      if (!is_trace_name(s.source) || !is_trace_name(s.minus))
        bad(spec, "add(c, A - B): A and B must be traces (.h5), got '" + what + "'");
    } else if (is_trace_name(what)) {
      s.source = what;
    } else if (what.empty()) {
      bad(spec, "add: the vector is missing");
    } else {
      s.vector_file = what;
    }
    if (s.aligned && s.source.empty())
      bad(spec, "add(c, ..., aligned) takes traces (A.h5 - B.h5 or A.h5): a vector has no positions to align");
  } else {
    bad(spec, "unknown op '" + name + "' (ops: zero, mean, mean(ref.h5), patch(src.h5), add(c, vec.json), "
                                      "add(c, a.h5 - b.h5), add(c, a.h5 - b.h5, aligned), scale(c))");
  }
}

std::string fmt_double(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

std::string resolve_path(const std::string& base_dir, const std::string& p) {
  if (p.empty() || base_dir.empty() || std::filesystem::path(p).is_absolute()) return p;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

}  // namespace

namespace {
// A range's bounds on an axis of length n: negative bounds count from n, and so does the end
// 0 of a negative single index (-1 is [-1, 0): the last one).
std::pair<int64_t, int64_t> bounds(int64_t a, int64_t b, int64_t n) {
  if (b != IndexSet::kOpen && (b < 0 || (b == 0 && a < 0))) b += n;
  if (a < 0) a += n;
  return {a, b};
}
}  // namespace

std::string trim_blanks(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

bool IndexSet::contains(int64_t i, int64_t n) const {
  if (ranges.empty()) return true;
  for (auto [a0, b0] : ranges) {
    auto [a, b] = bounds(a0, b0, n);
    if (i >= a && (b == kOpen || i < b)) return true;
  }
  return false;
}

bool IndexSet::has_negative() const {
  for (auto [a, b] : ranges)
    if (a < 0 || (b != kOpen && b < 0)) return true;
  return false;
}

int64_t IndexSet::max_named(int64_t n) const {
  int64_t m = -1;
  for (auto [a0, b0] : ranges) {
    auto [a, b] = bounds(a0, b0, n);
    const int64_t last = b == kOpen ? std::max(a, n - 1) : b - 1;
    if (last >= a) m = std::max(m, last);
  }
  return m;
}

std::string IndexSet::text() const {
  std::string out;
  for (auto [a, b] : ranges) {
    if (!out.empty()) out += "|";
    if (b != kOpen && b == a + 1) out += std::to_string(a);
    else {
      out += std::to_string(a);
      out += ':';
      if (b != kOpen) out += std::to_string(b);
    }
  }
  return out;
}

IndexSet parse_index_set(const std::string& text, const std::string& what, bool allow_negative) {
  IndexSet set;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, '|')) {
    item = trim_blanks(item);
    const size_t colon = item.find(':');
    int64_t a = 0, b = IndexSet::kOpen;
    if (colon == std::string::npos) {
      if (!parse_int(item, a)) throw std::invalid_argument(what + " '" + item + "' is not an index");
      b = a + 1;   // -1: [-1, 0), the last index (bounds())
    } else {
      const std::string from = trim_blanks(item.substr(0, colon)), to = trim_blanks(item.substr(colon + 1));
      if ((!from.empty() && !parse_int(from, a)) || (!to.empty() && !parse_int(to, b)))
        throw std::invalid_argument(what + " '" + item + "' is not a range (A:B, end excluded)");
      // Empty whatever the axis' length when both ends count from the same side.
      if (b != IndexSet::kOpen && (a >= 0) == (b >= 0) && b <= a)
        throw std::invalid_argument(what + " '" + item + "' is an empty range (A:B, end excluded)");
    }
    // No axis is that long (prompts, heads and neurons are int32-sized); past this, bounds
    // arithmetic such as -a would overflow (pos=-2^63 edited nothing).
    constexpr int64_t kLimit = int64_t(1) << 31;
    if (a <= -kLimit || a >= kLimit || (b != IndexSet::kOpen && (b <= -kLimit || b >= kLimit)))
      throw std::invalid_argument(what + " '" + item + "' is beyond any axis (|index| < 2^31)");
    if (!allow_negative && (a < 0 || (b != IndexSet::kOpen && b < 0)))
      throw std::invalid_argument(what + " '" + item + "' is negative (only pos and key count from the end)");
    set.ranges.push_back({a, b});
  }
  if (set.ranges.empty()) throw std::invalid_argument(what + " is empty");
  return set;
}

const char* edit_op_name(EditOp op) {
  switch (op) {
    case EditOp::Zero: return "zero";
    case EditOp::Mean: return "mean";
    case EditOp::Patch: return "patch";
    case EditOp::Add: return "add";
    case EditOp::Scale: return "scale";
  }
  return "?";
}

const std::vector<std::string>& intervention_site_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (Hook h : editable_hooks()) n.push_back(hook_generic_name(h));
    return n;
  }();
  return names;
}

std::string InterventionSpec::site_text() const {
  // Built by appends: GCC 12's -Wrestrict misfires on chains of string temporaries here.
  std::string s;
  if (!hook_info(hook).per_layer) {
    s = hook_info(hook).pattern;
  } else {
    s = "layers.";
    s += layers.all() ? std::string("*") : layers.text();
    s += '.';
    s += site_short_name(hook);
  }
  std::string sel;
  auto add = [&](const char* name, const IndexSet& set) {
    if (set.all()) return;
    if (!sel.empty()) sel += ',';
    sel += name;
    sel += '=';
    sel += set.text();
  };
  add("head", head), add("neuron", neuron), add("key", key), add("pos", pos), add("row", row), add("step", step);
  if (!sel.empty()) {
    s += '[';
    s += sel;
    s += ']';
  }
  return s;
}

std::string InterventionSpec::text() const {
  std::string o = site_text();
  o += '=';
  o += edit_op_name(op);
  std::string args;
  switch (op) {
    case EditOp::Zero: break;
    case EditOp::Mean: args = source; break;
    case EditOp::Patch: args = source; break;
    case EditOp::Scale: args = fmt_double(c); break;
    case EditOp::Add:
      args = fmt_double(c);
      args += ", ";
      if (!vector_file.empty()) {
        args += vector_file;
      } else {
        args += source;
        if (!minus.empty()) {
          args += " - ";
          args += minus;
        }
        if (aligned) args += ", aligned";
      }
      break;
  }
  if (!args.empty()) {
    o += '(';
    o += args;
    o += ')';
  }
  return o;
}

InterventionSpec parse_intervention(const std::string& text) {
  const std::string spec = trim_blanks(text);
  if (spec.empty()) throw std::invalid_argument("intervention '': empty (e.g. layers.3.attn.z[head=2]=zero)");
  // SITE[SELECTORS]=OP: the '=' that ends the site is the first one outside brackets.
  size_t eq = std::string::npos;
  int depth = 0;
  for (size_t i = 0; i < spec.size() && eq == std::string::npos; ++i) {
    if (spec[i] == '[') ++depth;
    else if (spec[i] == ']') --depth;
    else if (spec[i] == '=' && depth == 0) eq = i;
  }
  if (eq == std::string::npos) bad(spec, "no '=OP' (e.g. layers.3.attn.z[head=2]=zero)");
  std::string site = trim_blanks(spec.substr(0, eq)), selectors;
  const size_t open = site.find('[');
  if (open != std::string::npos) {
    if (site.back() != ']') bad(spec, "selectors must end with ']'");
    selectors = site.substr(open + 1, site.size() - open - 2);
    site = trim_blanks(site.substr(0, open));
  }
  InterventionSpec s;
  parse_site(s, spec, site);
  std::string item;
  std::istringstream in(selectors);
  while (std::getline(in, item, ',')) {
    item = trim_blanks(item);
    if (item.empty()) continue;
    const size_t e = item.find('=');
    if (e == std::string::npos) bad(spec, "selector '" + item + "' has no '=' (e.g. head=2)");
    set_selector(s, spec, trim_blanks(item.substr(0, e)), trim_blanks(item.substr(e + 1)));
  }
  parse_op(s, spec, trim_blanks(spec.substr(eq + 1)));
  return s;
}

InterventionSpec intervention_from_json(const nlohmann::json& j, const std::string& base_dir, const std::string& where) {
  InterventionSpec s;
  if (j.is_string()) {
    s = parse_intervention(j.get<std::string>());
  } else if (j.is_object()) {
    // The object form is the text form's parts: rebuild the text and parse it, so that both
    // forms mean exactly the same.
    auto str = [&](const char* key) -> std::string {
      if (!j.contains(key)) return "";
      const auto& v = j.at(key);
      if (v.is_string()) return v.get<std::string>();
      if (v.is_number_integer() || v.is_number_float()) return v.dump();
      throw std::invalid_argument(where + ": field '" + key + "' must be a string or a number");
    };
    for (const auto& [key, v] : j.items()) {
      (void)v;
      static const char* known[] = {"site", "head", "pos", "row", "step", "neuron", "key", "op", "c", "vector", "source", "minus", "aligned"};
      if (std::find(std::begin(known), std::end(known), key) == std::end(known))
        throw std::invalid_argument(where + ": unknown field '" + key +
                                    "' (fields: site, head, pos, row, step, neuron, key, op, c, vector, source, minus, aligned)");
    }
    if (str("site").empty() || str("op").empty()) throw std::invalid_argument(where + ": needs 'site' and 'op'");
    std::string sel;
    for (const char* key : {"head", "neuron", "key", "pos", "row", "step"})
      if (j.contains(key)) {
        if (!sel.empty()) sel += ',';
        sel += key;
        sel += '=';
        sel += str(key);
      }
    const std::string op = str("op");
    std::string args;
    if (op == "scale") args = str("c");
    else if (op == "add") args = str("c") + ", " + (j.contains("vector") ? str("vector") : str("source") + (j.contains("minus") ? " - " + str("minus") : ""));
    else args = str("source");
    if (op == "add" && j.contains("aligned")) {
      if (!j.at("aligned").is_boolean()) throw std::invalid_argument(where + ": field 'aligned' must be true or false");
      if (j.at("aligned").get<bool>()) args += ", aligned";
    }
    std::string text = str("site");
    if (!sel.empty()) text += "[" + sel + "]";
    text += "=" + op;
    if (!args.empty()) text += "(" + args + ")";
    try {
      s = parse_intervention(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what());
    }
  } else {
    throw std::invalid_argument(where + ": each intervention is an object or a string");
  }
  s.vector_file = resolve_path(base_dir, s.vector_file);
  s.source = resolve_path(base_dir, s.source);
  s.minus = resolve_path(base_dir, s.minus);
  return s;
}

std::vector<InterventionSpec> load_interventions_file(const std::string& path) {
  const std::string text = read_regular_file(path, "--interventions");   // a FIFO or /dev/zero: one line
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("--interventions '" + path + "': not JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_array()) throw std::runtime_error("--interventions '" + path + "': expected a JSON array of interventions");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::vector<InterventionSpec> out;
  for (size_t i = 0; i < j.size(); ++i) {
    try {
      out.push_back(intervention_from_json(j[i], dir, "--interventions '" + path + "' item " + std::to_string(i)));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
  }
  return out;
}

}  // namespace lmscope
