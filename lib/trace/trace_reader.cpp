#include "trace/trace_reader.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <system_error>

#include "io/regular_file.h"
#include "trace/hooks.h"
#include "trace/trace_layout.h"

namespace lmscope {

namespace fs = std::filesystem;

int HookData::axis(const std::string& name) const {
  auto it = std::find(axes.begin(), axes.end(), name);
  return it == axes.end() ? -1 : int(it - axes.begin());
}

std::string step_group_name(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%04d", step);
  return name;
}

namespace {

// "step_0012" -> 12, anything else -> -1
int parse_step_name(const std::string& name) {
  if (name.size() < 6 || name.compare(0, 5, "step_") != 0) return -1;
  std::string digits = name.substr(5);
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

std::vector<std::string> split_axes(const std::string& axes) {
  std::vector<std::string> out;
  if (axes.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t end = axes.find(',', start);
    out.push_back(axes.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string hook_to_path(const std::string& hook) {
  std::string p = hook;
  std::replace(p.begin(), p.end(), '.', '/');
  return p;
}

// Hook paths are a few levels deep (step_0000/layers/3/attn/q); far deeper is a hostile file.
constexpr int kMaxGroupDepth = 32;

// Walks a step's groups, keeping each dataset's header (name, shape, appended rows). A soft or
// hard link back up to an ancestor would make this recurse forever: every group is entered
// once (by object identity), deep nesting is refused. An external link is refused: it would
// show another file's data as this trace's.
void collect_hooks(const h5::Group& g, const std::string& prefix, int depth, std::set<std::string>& seen,
                   std::vector<DatasetHeader>& out) {
  for (const std::string& child : g.children()) {
    std::string dotted = prefix.empty() ? child : prefix + "." + child;
    h5::ChildKind k = g.kind(child);
    if (k == h5::ChildKind::ExternalLink) {
      throw std::runtime_error("'" + g.file_path() + "' " + (g.name() == "/" ? "" : g.name()) + "/" + child +
                               ": an external link (into another file); traces never hold one");
    } else if (k == h5::ChildKind::Group) {
      h5::Group sub = g.open_group(child);
      if (!seen.insert(sub.identity()).second)
        throw std::runtime_error("'" + g.file_path() + "' " + sub.name() +
                                 ": a group reached a second time (a link cycle or a second link to one group); not a trace layout");
      if (depth + 1 > kMaxGroupDepth)
        throw std::runtime_error("'" + g.file_path() + "' " + sub.name() + ": groups nested more than " +
                                 std::to_string(kMaxGroupDepth) + " levels deep; not a trace layout");
      collect_hooks(sub, dotted, depth + 1, seen, out);
    } else if (k == h5::ChildKind::Dataset) {
      h5::Dataset ds = g.open_dataset(child);
      DatasetHeader d;
      // The attribute is the name of record; the path is the fallback for other writers.
      d.hook = ds.has_attr("hook") && ds.attr_is_string("hook") ? ds.attr_string("hook") : dotted;
      // Only hooks a reader interprets need a shape here; others are only diffed, value by value.
      if (parse_hook_name(d.hook)) d.shape = ds.shape();
      if (ds.has_attr("rows") && ds.attr_is_string("rows")) d.rows = ds.attr_string("rows");
      out.push_back(std::move(d));
    }
  }
}

// Outside the steps (tokenizer/...): every link is checked for an external one, every group
// entered once and at most kMaxGroupDepth deep, as in collect_hooks.
void refuse_external_links(const h5::Group& g, int depth, std::set<std::string>& seen) {
  for (const std::string& child : g.children()) {
    const h5::ChildKind k = g.kind(child);
    const std::string where = "'" + g.file_path() + "' " + (g.name() == "/" ? "" : g.name()) + "/" + child;
    if (k == h5::ChildKind::ExternalLink)
      throw std::runtime_error(where + ": an external link (into another file); traces never hold one");
    if (k != h5::ChildKind::Group || (depth == 0 && parse_step_name(child) >= 0)) continue;
    h5::Group sub = g.open_group(child);
    if (!seen.insert(sub.identity()).second) continue;   // reached before: already checked
    if (depth + 1 > kMaxGroupDepth)
      throw std::runtime_error(where + ": groups nested more than " + std::to_string(kMaxGroupDepth) +
                               " levels deep; not a trace layout");
    refuse_external_links(sub, depth + 1, seen);
  }
}

// The rows the `prompts` attribute lists (-1 when absent or not a JSON list), and config_json's
// vocab_size (-1 when absent): what the shapes are checked against.
RootDims root_dims(const h5::Group& root) {
  RootDims d;
  auto json_attr = [&](const char* key) {
    if (!root.has_attr(key) || !root.attr_is_string(key)) return nlohmann::json();
    return nlohmann::json::parse(root.attr_string(key), nullptr, /*allow_exceptions=*/false);
  };
  const nlohmann::json prompts = json_attr("prompts");
  if (prompts.is_array() && !prompts.empty()) d.B = int64_t(prompts.size());
  const nlohmann::json config = json_attr("config_json");
  auto config_int = [&](const char* key) {
    return config.is_object() && config.contains(key) && config[key].is_number_integer() ? config[key].get<int64_t>()
                                                                                         : int64_t(-1);
  };
  d.V = config_int("vocab_size");
  d.positions = config_int("max_position_embeddings");
  return d;
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error("cannot open trace '" + path + "': No such file or directory");
  if (fs::is_directory(path, ec)) throw std::runtime_error("cannot open trace '" + path + "': it is a directory");
  // A FIFO or a device would block HDF5's open (then time out as "damaged") or never end.
  try {
    require_regular_file(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("cannot open trace " + std::string(e.what()));   // "cannot open trace P: is not a regular file (a FIFO)"
  }
  if (!h5::File::is_hdf5(path)) throw std::runtime_error("'" + path + "' is not an HDF5 file");
  try {
    file_ = h5::File::open_read(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot open trace '" + path + "': " + e.what());
  }
  const h5::Group& root = file_.root();
  if (!root.has_attr("format")) throw std::runtime_error("'" + path + "' is not an lmscope trace (no 'format' attribute)");
  if (!root.attr_is_string("format") || root.attr_string("format") != "lmscope-trace")
    throw std::runtime_error("'" + path + "' is not an lmscope trace (format is not 'lmscope-trace')");
  if (!root.has_attr("complete") || root.attr_is_string("complete") || root.attr_int("complete") != 1)
    throw std::runtime_error("'" + path + "' is incomplete (no complete=1)");
  // A newer layout read as an older one would give wrong values that look right.
  if (root.has_attr("format_version") &&
      (root.attr_is_string("format_version") || root.attr_int("format_version") > kTraceFormatVersion))
    throw std::runtime_error("'" + path + "' has a format_version this lmscope does not read (it reads 1.." +
                             std::to_string(kTraceFormatVersion) + ")");
  std::set<std::string> outside_steps{root.identity()};
  refuse_external_links(root, 0, outside_steps);
  // Steps are numbered 0..n-1 with one group each: a lone step_999999999 must not make a
  // billion-entry table (nor a billion-step loop in the comparer).
  std::map<int, std::string> found;
  for (const std::string& child : root.children()) {
    int n = parse_step_name(child);
    if (n < 0 || root.kind(child) != h5::ChildKind::Group) continue;
    auto [it, fresh] = found.emplace(n, child);
    if (!fresh)
      throw std::runtime_error("'" + path + "' has two groups for step " + std::to_string(n) + ": " + it->second +
                               " and " + child);
  }
  if (!found.empty() && size_t(found.rbegin()->first) >= found.size())
    throw std::runtime_error("'" + path + "' has " + found.rbegin()->second + " but only " +
                             std::to_string(found.size()) + " step groups (steps must be numbered 0.." +
                             std::to_string(found.size() - 1) + ")");
  // The n_steps attribute, when present, must count the groups (a reader may loop on it).
  if (root.has_attr("n_steps") && (root.attr_is_string("n_steps") || root.attr_int("n_steps") != int64_t(found.size())))
    throw std::runtime_error("'" + path + "' has n_steps = " +
                             (root.attr_is_string("n_steps") ? std::string("a string") : std::to_string(root.attr_int("n_steps"))) +
                             " but " + std::to_string(found.size()) + " step groups");
  steps_.reserve(found.size());
  std::set<std::string> step_ids;
  for (const auto& [n, child] : found) {
    steps_.push_back(root.open_group(child));
    if (!step_ids.insert(steps_.back().identity()).second)
      throw std::runtime_error("'" + path + "' " + child + " is a second link to another step's group; not a trace layout");
  }
  // Every step's dataset headers, checked against each other once (trace/trace_layout.h).
  std::vector<StepLayout> layout(steps_.size());
  for (size_t n = 0; n < steps_.size(); ++n) {
    const h5::Group& g = steps_[n];
    StepLayout& st = layout[n];
    // The numbers only: a damaged `phase` is reported by step_info() where it is shown.
    st.info.step = int(n);
    st.has_T = g.has_attr("T");
    st.has_S = g.has_attr("S");
    if (st.has_T) st.info.T = g.attr_int("T");
    if (st.has_S) st.info.S = g.attr_int("S");
    if (g.has_attr("past_length")) st.info.past_length = g.attr_int("past_length");
    std::set<std::string> seen{g.identity()};
    collect_hooks(g, "", 1, seen, st.datasets);
  }
  Shape gen_shape;
  const bool has_gen = has_generated_ids();
  if (has_gen) gen_shape = root.open_dataset("generated_ids").shape();
  check_trace_layout(path, root_dims(root), layout, has_gen ? &gen_shape : nullptr);
  hooks_.resize(layout.size());
  for (size_t n = 0; n < layout.size(); ++n) {
    for (const DatasetHeader& d : layout[n].datasets) hooks_[n].push_back(d.hook);
    std::sort(hooks_[n].begin(), hooks_[n].end(), [](const std::string& a, const std::string& b) {
      std::string ka = hook_sort_key(a), kb = hook_sort_key(b);
      return ka != kb ? ka < kb : a < b;
    });
  }
}

bool TraceReader::has_root_attr(const std::string& key) const { return file_.root().has_attr(key); }
std::vector<std::string> TraceReader::root_attr_names() const { return file_.root().attr_names(); }
std::string TraceReader::root_attr_string(const std::string& key) const { return file_.root().attr_string(key); }
int64_t TraceReader::root_attr_int(const std::string& key) const { return file_.root().attr_int(key); }
double TraceReader::root_attr_double(const std::string& key) const { return file_.root().attr_double(key); }
std::vector<int32_t> TraceReader::root_attr_ints(const std::string& key) const { return file_.root().attr_ints(key); }

namespace {
// Every attribute of a group as one JSON object text (strings, numbers, number arrays).
std::string attrs_json(const h5::Object& obj) {
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& key : obj.attr_names()) {
    if (obj.attr_is_string(key)) {
      j[key] = obj.attr_string(key);
    } else {
      std::vector<double> v = obj.attr_doubles(key);
      bool is_int = obj.attr_is_int(key);
      // An integer attribute past int64 (a uint64 2^64-1) stays a double: the cast would be UB.
      auto one = [&](double x) {
        return is_int && x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? nlohmann::json(int64_t(x))
                                                                                  : nlohmann::json(x);
      };
      if (v.size() == 1) {
        j[key] = is_int ? nlohmann::json(obj.attr_int(key)) : nlohmann::json(v[0]);
      } else {
        nlohmann::json arr = nlohmann::json::array();
        for (double x : v) arr.push_back(one(x));
        j[key] = arr;
      }
    }
  }
  // Strings are the file's bytes: one that is not UTF-8 is shown with U+FFFD, not refused.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

std::string TraceReader::root_attrs_json() const { return attrs_json(file_.root()); }

std::string TraceReader::step_group_attrs_json(int step, const std::string& group) const {
  const h5::Group& g = step_group(step);
  if (!g.exists(group) || g.kind(group) != h5::ChildKind::Group) return "{}";
  return attrs_json(g.open_group(group));
}

bool TraceReader::has_step(int step) const {
  return step >= 0 && size_t(step) < steps_.size() && steps_[step].id() >= 0;
}

const h5::Group& TraceReader::step_group(int step) const {
  if (!has_step(step)) throw std::runtime_error("'" + path_ + "' has no " + step_group_name(step));
  return steps_[step];
}

StepInfo TraceReader::step_info(int step) const {
  const h5::Group& g = step_group(step);
  StepInfo s;
  s.step = step;
  if (g.has_attr("phase")) s.phase = g.attr_string("phase");
  if (g.has_attr("use_cache")) s.use_cache = g.attr_int("use_cache") != 0;
  if (g.has_attr("past_length")) s.past_length = g.attr_int("past_length");
  if (g.has_attr("T")) s.T = g.attr_int("T");
  if (g.has_attr("S")) s.S = g.attr_int("S");
  return s;
}

std::vector<std::string> TraceReader::hooks(int step) const {
  step_group(step);   // throws for a step the trace does not have
  return hooks_[size_t(step)];
}

bool TraceReader::has_hook(int step, const std::string& hook) const {
  if (!has_step(step)) return false;
  const h5::Group& g = steps_[step];
  std::string p = hook_to_path(hook);
  return g.exists(p) && g.kind(p) == h5::ChildKind::Dataset;
}

namespace {
bool holds_appended_rows(const h5::Dataset& ds) {
  return ds.has_attr("rows") && ds.attr_is_string("rows") && ds.attr_string("rows") == kKvRowsAppended;
}
}  // namespace

HookData TraceReader::read(int step, const std::string& hook) const {
  const h5::Group& g = step_group(step);
  std::string p = hook_to_path(hook);
  if (!g.exists(p)) throw std::runtime_error("'" + path_ + "' has no hook '" + hook + "' in " + step_group_name(step));
  h5::Dataset ds = g.open_dataset(p);
  if (holds_appended_rows(ds)) return read_kv_cache(step, hook);
  h5::DatasetData d = ds.read();
  HookData h;
  h.hook = hook;
  h.shape = std::move(d.shape);
  h.values = std::move(d.values);
  h.is_int = d.is_int;
  if (ds.has_attr("axes")) h.axes = split_axes(ds.attr_string("axes"));
  // Tools index shapes by axis name (select_row, last_positions): a name past the rank
  // would read outside the shape.
  if (!h.axes.empty() && h.axes.size() != h.shape.size())
    throw std::runtime_error("'" + path_ + "' " + step_group_name(step) + " " + hook + ": axes '" +
                             ds.attr_string("axes") + "' name " + std::to_string(h.axes.size()) +
                             " axes but the dataset has " + std::to_string(h.shape.size()));
  if (hook_holds_ids(hook)) check_ids(h.values, "'" + path_ + "' " + step_group_name(step) + " " + hook);
  return h;
}

HookData TraceReader::read_kv_cache(int step, const std::string& hook) const {
  KvState& st = kv_[hook];
  if (st.step > step) st = KvState{};   // an earlier step than the one kept: rebuild from step 0
  const std::string p = hook_to_path(hook);
  for (int s = st.step + 1; s <= step; ++s) {
    const std::string where = "'" + path_ + "' " + step_group_name(s) + " " + hook;
    const h5::Group& g = step_group(s);
    if (!g.exists(p) || g.kind(p) != h5::ChildKind::Dataset)
      throw std::runtime_error(where + ": missing, so the cache of " + step_group_name(step) +
                               " cannot be rebuilt (each step stores only the rows it appended)");
    h5::Dataset ds = g.open_dataset(p);
    if (!holds_appended_rows(ds))
      throw std::runtime_error(where + ": a whole cache among steps that store appended rows (rows = \"appended\")");
    if (!ds.has_attr("first_position") || ds.attr_is_string("first_position") || !ds.attr_is_int("first_position"))
      throw std::runtime_error(where + ": appended cache rows without an integer first_position attribute");
    const int64_t first = ds.attr_int("first_position");
    h5::DatasetData d = ds.read();
    st.cache.add(d.shape, d.values, first, where);
    st.step = s;
    st.S = first + d.shape[2];
  }
  HookData h;
  h.hook = hook;
  h.axes = {"B", "Hkv", "S", "hd"};
  h.shape = st.cache.cache_shape(st.S);
  h.values = st.cache.cache(st.S, "'" + path_ + "' " + step_group_name(step) + " " + hook);
  return h;
}

bool TraceReader::has_generated_ids() const {
  return has_dataset("generated_ids");
}

bool TraceReader::has_dataset(const std::string& path) const {
  return file_.root().exists(path) && file_.root().kind(path) == h5::ChildKind::Dataset;
}

h5::DatasetData TraceReader::read_dataset(const std::string& path) const { return file_.root().read_dataset(path); }

std::vector<int32_t> TraceReader::read_ints(const std::string& path) const {
  const h5::DatasetData d = read_dataset(path);
  check_ids(d.values, "'" + path_ + "' /" + path);
  return std::vector<int32_t>(d.values.begin(), d.values.end());
}

std::vector<std::string> TraceReader::read_strings(const std::string& path) const {
  return file_.root().open_dataset(path).read_strings();
}

HookData TraceReader::generated_ids() const {
  h5::DatasetData d = file_.root().read_dataset("generated_ids");
  HookData h;
  h.hook = "generated_ids";
  h.axes = {"B", "N"};
  h.shape = std::move(d.shape);
  h.values = std::move(d.values);
  h.is_int = d.is_int;
  check_ids(h.values, "'" + path_ + "' generated_ids");
  return h;
}

}  // namespace lmscope
