#include "trace/trace_layout.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "trace/hooks.h"
#include "trace/kv_rows.h"
#include "trace/trace_reader.h"   // step_group_name

namespace lmscope {

namespace {

// Built by appending: `"," + std::to_string(...)` trips GCC 12's bogus -Wrestrict.
std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) t += ',';
    t += std::to_string(s[i]);
  }
  t += ']';
  return t;
}

// One axis size agreed on by every dataset that has the axis; `source` says who set it first.
struct Agreed {
  int64_t size = -1;
  std::string source;
};

class Checker {
 public:
  Checker(const std::string& path, const RootDims& root)
      : path_(path), max_positions_(root.positions > 0 ? std::min(root.positions, kMaxTracePositions) : kMaxTracePositions) {
    if (root.B > 0) dims_["B"] = {root.B, "the prompts attribute"};
    if (root.V > 0) dims_["V"] = {root.V, "config_json's vocab_size"};
  }

  void step(const StepLayout& st) {
    const std::string where = "'" + path_ + "' " + step_group_name(st.info.step);
    step_dims_.clear();
    if (st.has_T) {
      if (st.info.T < 1 || st.info.T > max_positions_)
        throw std::runtime_error(where + ": attribute T = " + std::to_string(st.info.T) + " is not in 1.." +
                                 std::to_string(max_positions_));
      step_dims_["T"] = {st.info.T, "the step's T attribute"};
    }
    if (st.has_S) {
      if (st.info.S < 1 || st.info.S > max_positions_ || (st.has_T && st.info.S < st.info.T))
        throw std::runtime_error(where + ": attribute S = " + std::to_string(st.info.S) + " is not in " +
                                 (st.has_T ? "T" : "1") + ".." + std::to_string(max_positions_));
      step_dims_["S"] = {st.info.S, "the step's S attribute"};
    }
    if (st.info.past_length < 0 || st.info.past_length > max_positions_)
      throw std::runtime_error(where + ": attribute past_length = " + std::to_string(st.info.past_length) +
                               " is not in 0.." + std::to_string(max_positions_));
    // The report and the lens place query t at column past_length + t of a table S wide.
    if (st.has_T && st.has_S && st.info.past_length + st.info.T != st.info.S)
      throw std::runtime_error(where + ": past_length " + std::to_string(st.info.past_length) + " + T " +
                               std::to_string(st.info.T) + " is not S " + std::to_string(st.info.S));
    for (const DatasetHeader& d : st.datasets) dataset(where + " " + d.hook, d);
  }

  void generated_ids(const Shape& shape) {
    const std::string where = "'" + path_ + "' generated_ids";
    if (shape.size() != 2)
      throw std::runtime_error(where + ": shape " + shape_text(shape) + " is not [B,N]");
    agree(where, "B", shape[0], dims_);
  }

 private:
  void dataset(const std::string& where, const DatasetHeader& d) {
    const auto parsed = parse_hook_name(d.hook);
    if (!parsed) return;   // a hook no lmscope reader interprets: only diffed, value by value
    std::vector<std::string> axes = hook_axes(parsed->id);
    // kv rows: the step's new rows. (A string, not "T": GCC 12's bogus -Wrestrict on assign.)
    if (d.rows == kKvRowsAppended && axes.size() == 4) axes[2] = std::string(1, 'T');
    if (d.shape.size() != axes.size()) {
      std::string names;
      for (const std::string& a : axes) {
        if (!names.empty()) names += ',';
        names += a;
      }
      throw std::runtime_error(where + ": shape " + shape_text(d.shape) + " has rank " + std::to_string(d.shape.size()) +
                               ", not that of [" + names + "] (docs/hooks.md)");
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const std::string& a = axes[i];
      if (d.shape[i] < 1)
        throw std::runtime_error(where + ": axis " + a + " is " + std::to_string(d.shape[i]) +
                                 " (every axis is at least 1)");
      if (a == "T" && d.rows == "last") {   // lmscope-hf-trace --logits-rows last
        if (d.shape[i] != 1)
          throw std::runtime_error(where + ": axis T is " + std::to_string(d.shape[i]) + " but rows = last keeps 1");
      } else if (a == "T" || a == "S") {
        agree(where, a, d.shape[i], step_dims_);
      } else if (a == "blocks") {   // D/32 for one hook, F/32 for another
        agree(where, a, d.shape[i], dims_, std::string("blocks of ") + hook_info(parsed->id).pattern);
      } else {
        agree(where, a, d.shape[i], dims_);
      }
    }
  }

  void agree(const std::string& where, const std::string& axis, int64_t size, std::map<std::string, Agreed>& dims,
             const std::string& key_override = "") {
    const std::string key = key_override.empty() ? axis : key_override;
    auto it = dims.find(key);
    if (it == dims.end()) {
      dims[key] = {size, where.substr(where.rfind("' ") + 2)};
      return;
    }
    if (it->second.size != size)
      throw std::runtime_error(where + ": axis " + axis + " is " + std::to_string(size) + " but " +
                               it->second.source + " says " + std::to_string(it->second.size) +
                               " (a trace's shapes must agree)");
  }

  const std::string& path_;
  const int64_t max_positions_;
  std::map<std::string, Agreed> dims_;        // the whole trace's
  std::map<std::string, Agreed> step_dims_;   // T and S of the step being checked
};

}  // namespace

void check_trace_layout(const std::string& path, const RootDims& root, const std::vector<StepLayout>& steps,
                        const Shape* generated_ids) {
  Checker c(path, root);
  for (const StepLayout& st : steps) c.step(st);
  if (generated_ids) c.generated_ids(*generated_ids);
}

bool hook_holds_ids(const std::string& hook) {
  const auto parsed = parse_hook_name(hook);
  if (!parsed) return hook == "generated_ids";
  switch (parsed->id) {
    case Hook::TokensInputIds:
    case Hook::TokensAttentionMask:
    case Hook::TokensPositionIds:
    case Hook::SampleCandidates:
    case Hook::SampleChosen:
    case Hook::LensTopkIds:
      return true;
    default:
      return false;
  }
}

void check_ids(const std::vector<double>& values, const std::string& where) {
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != std::floor(v)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", v);
      throw std::runtime_error(where + ": value " + buf + " at index " + std::to_string(i) +
                               " is not a token id (an integer within int32)");
    }
  }
}

}  // namespace lmscope
