// The intervention grammar (docs/interventions.md): plain data saying where a forward is edited
// (a site: a hook name, its layers and selectors) and how (an op). One parser for every tool:
//   layers.3.attn.z[head=2]=zero
//   layers.6.resid_pre[pos=0:]=add(4, love.h5 - hate.h5)
//   layers.6.resid_pre=add(4, love.h5 - hate.h5, aligned)
//   layers.0:4.ffn.act[neuron=17|90,pos=-1]=mean(ref.h5)
// and the same as JSON objects ({"site": "layers.3.attn.z", "head": 2, "op": "zero"}).
// Parsing checks the text only; what depends on the model or the run (layer, head and position
// ranges, source traces, vector widths) is checked by Interventions (intervene/interventions.h).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trace/hooks.h"

namespace lmscope {

// A selector's values: a union of half-open ranges [from, to), "2", "0:4", "1|5", "-3:" (a
// negative bound counts from the end of the axis it selects on). Empty: every index.
struct IndexSet {
  static constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
  std::vector<std::pair<int64_t, int64_t>> ranges;

  bool all() const { return ranges.empty(); }
  // Whether index i of an axis of length n is selected (negative bounds count from n).
  bool contains(int64_t i, int64_t n) const;
  bool has_negative() const;
  // The largest index this set can name on an axis of length n, or -1 if none; used to
  // refuse a head/neuron/layer out of range in one line.
  int64_t max_named(int64_t n) const;
  std::string text() const;   // as written: "2", "0:4", "1|5"
};

// "2", "0:4", ":3", "-1", "1|5|7:9". what: the selector's name, for the one-line error.
IndexSet parse_index_set(const std::string& text, const std::string& what, bool allow_negative);

// A run's tensors held in memory, standing in for a source trace (intervene/interventions.h).
struct MemorySource;
// How a spec's text names values held in memory: a run (patch(<cache>), mean(<cache>),
// add(c, <cache> - <cache>)) and a vector (add(c, <array>)).
inline constexpr char kMemoryRunLabel[] = "<cache>";
inline constexpr char kMemoryVectorLabel[] = "<array>";

enum class EditOp { Zero, Mean, Patch, Add, Scale };
const char* edit_op_name(EditOp op);

struct InterventionSpec {
  Hook hook = Hook::Embed;
  IndexSet layers;           // empty for a global site (embed, final_norm, logits)
  IndexSet head;             // H (or Hkv for k, v, k_norm, k_rope) axis
  IndexSet pos;              // token positions (RoPE position ids; negative: from the row's prompt end)
  IndexSet row;              // batch rows
  IndexSet step;             // the generation step that first fed the token (prompt tokens: 0)
  IndexSet neuron;           // the F axis (ffn.gate, ffn.up, ffn.act)
  IndexSet key;              // the S axis: key positions (attn.scores, attn.probs)
  EditOp op = EditOp::Zero;
  double c = 1.0;            // add: coefficient; scale: factor
  std::string vector_file;   // add: JSON array or whitespace-separated numbers
  std::string source;        // patch, mean, add: a trace file
  std::string minus;         // add: the trace subtracted from `source`
  // add of traces: false, one vector (row 0's last prompt position of A minus B's) added at every
  // selected position; true, A - B position by position ([T, D]: position p gets the
  // difference at p, from position 0; positions at or past T are left alone), as ActAdd does.
  bool aligned = false;
  // In memory instead of the files above (the Python module: a run_with_cache cache, a numpy
  // vector); `source`, `minus` and `vector_file` then hold the label the text shows ("<cache>").
  std::shared_ptr<const MemorySource> source_memory, minus_memory;
  std::vector<float> vector_values;

  // The canonical one-line form (parse_intervention(text()) gives this spec back).
  std::string text() const;
  // The site part alone: "layers.3.attn.z[head=2]".
  std::string site_text() const;
};

// The sites that may be edited: the hook table's editable hooks (HookInfo::editable), in
// forward order, as docs name them ("embed", "layers.L.resid_pre", ..., "logits").
const std::vector<std::string>& intervention_site_names();

// One spec from its text form. Throws std::invalid_argument with one line naming the spec and
// what is wrong ("unknown site", "unknown op", a malformed selector...).
InterventionSpec parse_intervention(const std::string& text);

// One spec from a JSON object, or a JSON string holding the text form. Relative file names
// are taken relative to `base_dir` (the JSON file's folder). `where` names it in errors.
InterventionSpec intervention_from_json(const nlohmann::json& j, const std::string& base_dir, const std::string& where);

// Spaces and tabs cut from both ends (a spec's parts; lmscope-patch's metric tokens).
std::string trim_blanks(const std::string& s);

// A --interventions file: a JSON array of objects or strings. One line for any error.
std::vector<InterventionSpec> load_interventions_file(const std::string& path);

}  // namespace lmscope
