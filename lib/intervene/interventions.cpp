#include "intervene/interventions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "intervene/hook_layout.h"
#include "io/regular_file.h"
#include "io/sha256.h"
#include "model/trace_config.h"
#include "trace/trace_reader.h"

namespace lmscope {

// Named rather than in the anonymous namespace below: Interventions::Resolved holds it, and a
// unity build would warn about a type with linkage holding one without.
namespace intervention_sources {
// One hook of one layer at step 0 (the prefill) of a source trace, read by (row, position).
struct SourceSlices {
  HookLayout layout;
  std::vector<float> values;
  std::vector<int64_t> prompt_len;   // per row
  std::vector<int64_t> first_col;    // per row: the column of position 0

  const float* at(int64_t row, int64_t pos) const {
    return values.data() + layout.offset(row, first_col[size_t(row)] + pos);
  }
};
}  // namespace intervention_sources
using intervention_sources::SourceSlices;

namespace {

// Bad input (std::invalid_argument: a tool's one line, a ValueError in Python), whether found
// against the model or against the run.
[[noreturn]] void fail(const InterventionSpec& s, const std::string& what) {
  throw std::invalid_argument("intervention '" + s.text() + "': " + what);
}

std::string range_text(int64_t n) { return n == 1 ? "0" : "0-" + std::to_string(n - 1); }


// A source trace (or a run held in memory): opened once per spec, checked to be of this model.
struct SourceTrace {
  std::string path, sha256;
  std::unique_ptr<TraceReader> reader;
  const MemorySource* memory = nullptr;   // instead of reader
  std::vector<int64_t> prompt_len;
  std::string padding_side;
};

// The same model: the same shapes (the config of a GGUF is rebuilt from its metadata, so the
// texts may differ while the numbers agree).
void check_same_model(const InterventionSpec& s, const std::string& path, const std::string& config_json,
                      const ModelConfig& cfg) {
  ModelConfig sc;
  try {
    sc = parse_trace_model_config(config_json, path);
  } catch (const std::exception& e) {
    fail(s, "source '" + path + "': " + e.what());
  }
  auto differs = [&](const char* what, int a, int b) {
    if (a != b)
      fail(s, "source '" + path + "' is a trace of another model (" + what + " " + std::to_string(a) + ", this model " +
                  std::to_string(b) + ")");
  };
  differs("layers", sc.num_layers, cfg.num_layers);
  differs("hidden_size", sc.hidden_size, cfg.hidden_size);
  differs("heads", sc.num_heads, cfg.num_heads);
  differs("kv heads", sc.num_kv_heads, cfg.num_kv_heads);
  differs("head_dim", sc.head_dim, cfg.head_dim);
  differs("intermediate_size", sc.intermediate_size, cfg.intermediate_size);
  differs("vocab_size", sc.vocab_size, cfg.vocab_size);
}

// The digest a record names an in-memory source by: every hook's name, shape and values.
std::string memory_sha256(const MemorySource& m) {
  std::string bytes;
  for (const auto& [name, d] : m.hooks) {
    bytes += name + '\0';
    for (int64_t n : d.shape) bytes.append(reinterpret_cast<const char*>(&n), sizeof n);
    for (double v : d.values) {
      const float f = float(v);
      bytes.append(reinterpret_cast<const char*>(&f), sizeof f);
    }
  }
  return sha256_bytes(bytes.data(), bytes.size());
}

SourceTrace open_source(const InterventionSpec& s, const std::string& path, const MemorySource* memory,
                        const ModelConfig& cfg) {
  SourceTrace st;
  st.path = path;
  if (!memory && path == kMemoryRunLabel)
    fail(s, std::string(kMemoryRunLabel) + " names a run held in memory (the Python module's caches); give a trace file");
  if (memory) {
    check_same_model(s, path, memory->config_json, cfg);
    st.memory = memory;
    st.sha256 = memory_sha256(*memory);
    st.prompt_len = memory->prompt_len;
    st.padding_side = memory->padding_side;
    return st;
  }
  try {
    st.reader = std::make_unique<TraceReader>(path);
    st.sha256 = sha256_file(path);
  } catch (const std::exception& e) {
    fail(s, e.what());
  }
  const TraceReader& r = *st.reader;
  if (!r.has_root_attr("config_json")) fail(s, "source '" + path + "' has no config_json: not a trace of a model run");
  check_same_model(s, path, r.root_attr_string("config_json"), cfg);
  try {
    for (const auto& p : nlohmann::json::parse(r.root_attr_string("prompts"))) st.prompt_len.push_back(int64_t(p.size()));
    st.padding_side = r.has_root_attr("padding_side") ? r.root_attr_string("padding_side") : "left";
  } catch (const std::exception& e) {
    fail(s, "source '" + path + "': unreadable prompts attribute (" + e.what() + ")");
  }
  return st;
}

SourceSlices read_slices(const InterventionSpec& s, const SourceTrace& st, Hook h, int layer) {
  const std::string name = hook_name(h, layer);
  HookData d;
  if (st.memory) {
    const auto it = st.memory->hooks.find(name);
    if (it == st.memory->hooks.end()) fail(s, "source '" + st.path + "' holds no " + name + " (keep it in the run)");
    d = it->second;
  } else {
    if (!st.reader->has_hook(0, name))
      fail(s, "source '" + st.path + "' has no " + name + " at step 0 (trace it with --hooks naming it)");
    d = st.reader->read(0, name);
  }
  if (d.shape.empty() || d.values.size() != size_t(shape_numel(d.shape)))
    fail(s, "source '" + st.path + "' " + name + ": its values do not fill its shape");
  SourceSlices out;
  out.layout = HookLayout(h, d.shape);
  out.values.assign(d.values.begin(), d.values.end());
  out.prompt_len = st.prompt_len;
  if (int64_t(st.prompt_len.size()) != out.layout.B)
    fail(s, "source '" + st.path + "' " + name + " has " + std::to_string(out.layout.B) + " rows but " +
                std::to_string(st.prompt_len.size()) + " prompts");
  // Every read below is at a position 0..L-1 of a row's prompt: an empty prompt would read
  // position -1, a prompt longer than the tensor past its end.
  for (size_t b = 0; b < st.prompt_len.size(); ++b) {
    const int64_t L = st.prompt_len[b];
    if (L < 1 || L > out.layout.T)
      fail(s, "source '" + st.path + "' " + name + ": row " + std::to_string(b) + "'s prompt has " + std::to_string(L) +
                  " tokens, step 0 holds " + std::to_string(out.layout.T) + " positions (a source needs 1 to " +
                  std::to_string(out.layout.T) + ")");
    out.first_col.push_back(st.padding_side == "right" ? 0 : out.layout.T - L);
  }
  return out;
}

// How errors name a steering vector: "vector file 'v.json'", or "vector <array>" (in memory).
std::string vector_what(const InterventionSpec& s) {
  return s.vector_values.empty() ? "vector file '" + s.vector_file + "'" : "vector " + s.vector_file;
}

// A steering vector's numbers as floats: some, and every one finite.
std::vector<float> finite_vector(const InterventionSpec& s, const std::vector<double>& v) {
  const std::string what = vector_what(s);
  if (v.empty()) fail(s, what + " holds no numbers");
  std::vector<float> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]) || std::fabs(v[i]) > 3.4e38)
      fail(s, what + ": item " + std::to_string(i) + " is not a finite float (" + std::to_string(v[i]) + ")");
    out.push_back(float(v[i]));
  }
  return out;
}

// A vector file: a JSON array of numbers, or numbers separated by white space.
std::vector<float> read_vector_file(const InterventionSpec& s) {
  const std::string& path = s.vector_file;
  std::string text;
  try {
    text = read_regular_file(path, "vector file");   // a FIFO or /dev/zero: one line, not a hang
  } catch (const std::runtime_error& e) {
    fail(s, e.what());
  }
  std::vector<double> v;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      for (const auto& x : j) {
        if (!x.is_number()) fail(s, "vector file '" + path + "': item " + std::to_string(v.size()) + " is not a number");
        v.push_back(x.get<double>());
      }
    } catch (const nlohmann::json::exception& e) {
      fail(s, "vector file '" + path + "': not a JSON array of numbers (" + e.what() + ")");
    }
  } else {
    std::istringstream in(text);
    std::string tok;
    while (in >> tok) {
      char* end = nullptr;
      const double x = std::strtod(tok.c_str(), &end);
      if (*end) fail(s, "vector file '" + path + "': item " + std::to_string(v.size()) + " '" + tok + "' is not a number");
      v.push_back(x);
    }
  }
  return finite_vector(s, v);
}

// ActAdd's steering (Turner et al. 2023): row 0's prompt of A minus row 0's prompt of B,
// position by position from position 0 ([T, R]). The pair must have one length: ActAdd pads the
// shorter prompt (with spaces) before the forward, which only the prompts can do. B absent
// (no rows): A's values alone.
std::vector<std::vector<float>> aligned_difference(const InterventionSpec& s, const SourceSlices& a,
                                                   const SourceSlices& b, int layer) {
  const int64_t T = a.prompt_len[0];
  const bool has_minus = !b.prompt_len.empty();
  if (has_minus && b.layout.R != a.layout.R)
    fail(s, "'" + s.source + "' and '" + s.minus + "' hold " + hook_name(s.hook, layer) + " of different shapes");
  if (has_minus && b.prompt_len[0] != T)
    fail(s, "aligned: '" + s.source + "' has a prompt of " + std::to_string(T) + " tokens, '" + s.minus + "' of " +
                std::to_string(b.prompt_len[0]) + " (pad the shorter prompt to the same length, as ActAdd pads with spaces)");
  std::vector<std::vector<float>> out(size_t(T), std::vector<float>(size_t(a.layout.R)));   // [T][R]
  for (int64_t p = 0; p < T; ++p)
    for (int64_t i = 0; i < a.layout.R; ++i) {
      const int64_t off = a.layout.rest_off[size_t(i)];
      out[size_t(p)][size_t(i)] = a.at(0, p)[off] - (has_minus ? b.at(0, p)[b.layout.rest_off[size_t(i)]] : 0.0f);
    }
  return out;
}

}  // namespace

struct Interventions::Resolved {
  InterventionSpec spec;
  std::vector<int> layers;                     // {-1} for embed
  std::string source_sha, minus_sha, vector_sha;
  std::map<int, SourceSlices> source;          // patch: per layer
  std::map<int, std::vector<float>> fixed;     // add (traces) / mean(ref): per layer, R values
  std::map<int, std::vector<std::vector<float>>> by_pos;   // add(..., aligned): per layer, [T][R]
  std::vector<float> vec;                      // add (file)
  std::map<std::pair<int, int64_t>, std::vector<float>> own_mean;   // mean: (layer, row) -> R values
};

Interventions::Interventions(std::vector<InterventionSpec> specs, const ModelConfig& cfg) : cfg_(cfg) {
  table_.resize(size_t(Hook::Count));
  // Each source trace is opened (and hashed) once, however many specs read it.
  std::map<std::pair<std::string, const MemorySource*>, std::shared_ptr<SourceTrace>> opened;
  auto open = [&](const InterventionSpec& s, const std::string& path, const MemorySource* memory) -> const SourceTrace& {
    auto& slot = opened[{path, memory}];
    if (!slot) slot = std::make_shared<SourceTrace>(open_source(s, path, memory, cfg));
    return *slot;
  };
  for (InterventionSpec& spec : specs) {
    auto r = std::make_unique<Resolved>();
    r->spec = std::move(spec);
    const InterventionSpec& s = r->spec;
    const Hook h = s.hook;
    const bool per_layer = hook_info(h).per_layer;
    if (!per_layer) {
      r->layers = {-1};
    } else {
      if (s.layers.max_named(cfg.num_layers) >= cfg.num_layers)
        fail(s, "layer " + std::to_string(s.layers.max_named(cfg.num_layers)) + " is out of range (the model has " +
                    std::to_string(cfg.num_layers) + " layers: " + range_text(cfg.num_layers) + ")");
      for (int l = 0; l < cfg.num_layers; ++l)
        if (s.layers.contains(l, cfg.num_layers)) r->layers.push_back(l);
    }
    const HookLayout shape = HookLayout::of_model(h, cfg, 1, 1, 1);
    if (!s.head.all() && s.head.max_named(shape.heads) >= shape.heads)
      fail(s, "head " + std::to_string(s.head.max_named(shape.heads)) + " is out of range (" + hook_info(h).pattern +
                  " has " + std::to_string(shape.heads) + " heads: " + range_text(shape.heads) + ")");
    if (!s.neuron.all() && s.neuron.max_named(cfg.intermediate_size) >= cfg.intermediate_size)
      fail(s, "neuron " + std::to_string(s.neuron.max_named(cfg.intermediate_size)) + " is out of range (" +
                  hook_generic_name(h) + " has " + std::to_string(cfg.intermediate_size) + " neurons: " +
                  range_text(cfg.intermediate_size) + ")");

    if (!s.vector_values.empty()) {
      r->vec = finite_vector(s, std::vector<double>(s.vector_values.begin(), s.vector_values.end()));
      r->vector_sha = sha256_bytes(r->vec.data(), r->vec.size() * sizeof(float));
    } else if (s.vector_file == kMemoryVectorLabel) {
      fail(s, std::string(kMemoryVectorLabel) + " names a vector held in memory (the Python module's arrays); give a vector file");
    } else if (!s.vector_file.empty()) {
      r->vec = read_vector_file(s);
      r->vector_sha = sha256_file(s.vector_file);
    }
    if (!s.vector_file.empty()) {
      if (hook_axis(h, "S") < 0 && int64_t(r->vec.size()) != shape.inner && int64_t(r->vec.size()) != shape.R)
        fail(s, vector_what(s) + " holds " + std::to_string(r->vec.size()) + " numbers; " +
                    hook_info(h).pattern + " takes " + std::to_string(shape.inner) +
                    (shape.R != shape.inner ? " (one per " + std::string(shape.heads > 1 ? "head" : "row") +
                                                  ") or " + std::to_string(shape.R) + " (the whole slice)"
                                            : ""));
    }
    if (!s.source.empty()) {
      const SourceTrace& src = open(s, s.source, s.source_memory.get());
      r->source_sha = src.sha256;
      const SourceTrace* minus = s.minus.empty() ? nullptr : &open(s, s.minus, s.minus_memory.get());
      if (minus) r->minus_sha = minus->sha256;
      for (int l : r->layers) {
        SourceSlices a = read_slices(s, src, h, l);
        if (s.op == EditOp::Patch) {
          r->source.emplace(l, std::move(a));
          continue;
        }
        if (s.op == EditOp::Add && s.aligned) {
          r->by_pos.emplace(l, aligned_difference(s, a, minus ? read_slices(s, *minus, h, l) : SourceSlices{}, l));
          continue;
        }
        std::vector<float> v(size_t(a.layout.R), 0.0f);
        if (s.op == EditOp::Mean) {   // every row's every prompt position
          int64_t n = 0;
          for (int64_t b = 0; b < a.layout.B; ++b)
            for (int64_t p = 0; p < a.prompt_len[size_t(b)]; ++p, ++n)
              for (int64_t i = 0; i < a.layout.R; ++i) v[size_t(i)] += a.at(b, p)[a.layout.rest_off[size_t(i)]];
          for (float& x : v) x /= float(std::max<int64_t>(n, 1));
        } else {                      // add: row 0's last prompt position, minus the other trace's
          auto last = [&](const SourceSlices& t, std::vector<float>& out, float sign) {
            const float* p = t.at(0, t.prompt_len[0] - 1);
            for (int64_t i = 0; i < t.layout.R; ++i) out[size_t(i)] += sign * p[t.layout.rest_off[size_t(i)]];
          };
          last(a, v, 1.0f);
          if (minus) {
            SourceSlices b = read_slices(s, *minus, h, l);
            if (b.layout.R != a.layout.R)
              fail(s, "'" + s.source + "' and '" + s.minus + "' hold " + hook_name(h, l) + " of different shapes");
            last(b, v, -1.0f);
          }
        }
        r->fixed.emplace(l, std::move(v));
      }
    }
    for (int l : r->layers) {
      auto& row = table_[size_t(h)];
      if (row.empty()) row.assign(size_t(std::max(cfg.num_layers, 1)), 0);
      row[size_t(l < 0 ? 0 : l)] = 1;
    }
    specs_.push_back(std::move(r));
  }
}

Interventions::~Interventions() = default;

void Interventions::begin_run(const std::vector<int64_t>& prompt_lengths, int max_new_tokens) {
  prompt_lengths_ = prompt_lengths;
  const int64_t B = int64_t(prompt_lengths.size());
  if (B == 0) return;
  const int64_t shortest = *std::min_element(prompt_lengths.begin(), prompt_lengths.end());
  const int64_t longest = *std::max_element(prompt_lengths.begin(), prompt_lengths.end());
  const int64_t last_pos = longest + max_new_tokens - 1;
  for (auto& r : specs_) {
    r->own_mean.clear();
    const InterventionSpec& s = r->spec;
    if (!s.row.all() && s.row.max_named(B) >= B)
      fail(s, "row " + std::to_string(s.row.max_named(B)) + " is outside the batch of " + std::to_string(B) +
                  " prompt(s) (rows " + range_text(B) + ")");
    for (auto [a, b] : s.pos.ranges) {
      if (a >= 0 && a > last_pos)
        fail(s, "pos " + std::to_string(a) + " is past the run's last position " + std::to_string(last_pos) +
                    " (prompt of " + std::to_string(longest) + " tokens + " + std::to_string(max_new_tokens) + " new)");
      if (a < 0 && -a > shortest)
        fail(s, "pos " + std::to_string(a) + " is before the start of a prompt of " + std::to_string(shortest) + " tokens");
      (void)b;
    }
    // Key positions: the same run's positions, seen from attn.probs' key axis.
    for (auto [a, b] : s.key.ranges) {
      if (a >= 0 && a > last_pos)
        fail(s, "key " + std::to_string(a) + " is past the run's last position " + std::to_string(last_pos));
      if (a < 0 && -a > longest + max_new_tokens)
        fail(s, "key " + std::to_string(a) + " is before the first key of a run of " +
                    std::to_string(longest + max_new_tokens) + " positions");
      (void)b;
    }
    // Steps that feed tokens: 0 the prompt, 1..max_new_tokens-1 the generated tokens fed back
    // (the last new token is never fed).
    for (auto [a, b] : s.step.ranges)
      if (a > max_new_tokens - 1)
        fail(s, "step " + std::to_string(a) + " is past the run's last step " + std::to_string(max_new_tokens - 1) +
                    " (" + std::to_string(max_new_tokens) + " new tokens)");
    for (const auto& [layer, src] : r->source) {
      (void)layer;
      if (src.layout.B != 1 && src.layout.B < B)
        fail(s, "source '" + s.source + "' has " + std::to_string(src.layout.B) + " rows for a batch of " +
                    std::to_string(B) + " (give it 1 row, or as many as the batch)");
      for (int64_t b = 0; b < B; ++b) {
        const int64_t sb = src.layout.B == 1 ? 0 : b;
        if (src.prompt_len[size_t(sb)] != prompt_lengths[size_t(b)])
          fail(s, "source '" + s.source + "' row " + std::to_string(sb) + " has " +
                      std::to_string(src.prompt_len[size_t(sb)]) + " prompt tokens, this run's row " + std::to_string(b) +
                      " has " + std::to_string(prompt_lengths[size_t(b)]) + ": patching needs prompts of equal length");
      }
      break;   // every layer's slices come from the same trace
    }
  }
}

void Interventions::apply(Backend& be, Hook h, int layer, Tensor& t, const EditContext& ctx) {
  Tensor host = be.to_host(t);   // the CPU backend: t itself, edited in place
  HookLayout lay(h, host.shape());
  float* x = host.f32();
  const Tensor& pos_ids = *ctx.position_ids;
  const Tensor& mask = *ctx.attention_mask;
  const int64_t S = mask.dim(1), col0 = S - lay.T;
  if (pos_ids.dim(0) != lay.B || pos_ids.dim(1) != lay.T)
    throw std::logic_error("Interventions::apply: " + hook_name(h, layer) + " is not [B,T,...] of this step");
  // Each key column's position (the key selector of attn.scores, attn.probs): its count of real
  // columns before it.
  std::vector<int64_t> key_pos;
  if (hook_axis(h, "S") >= 0) {
    key_pos.assign(size_t(lay.B * S), -1);
    for (int64_t b = 0; b < lay.B; ++b)
      for (int64_t c = 0, n = 0; c < S; ++c)
        if (mask.i32()[b * S + c]) key_pos[size_t(b * S + c)] = n++;
  }
  for (auto& rp : specs_) {
    Resolved& r = *rp;
    const InterventionSpec& s = r.spec;
    if (s.hook != h || std::find(r.layers.begin(), r.layers.end(), layer) == r.layers.end()) continue;
    std::vector<char> rest_on(size_t(lay.R));
    for (int64_t i = 0; i < lay.R; ++i)
      rest_on[size_t(i)] = s.head.contains(lay.rest_head[size_t(i)], lay.heads) &&
                           s.neuron.contains(lay.rest_last[size_t(i)], lay.inner);
    if (s.op == EditOp::Add && !r.vec.empty() && int64_t(r.vec.size()) != lay.inner && int64_t(r.vec.size()) != lay.R)
      fail(s, "vector of " + std::to_string(r.vec.size()) + " numbers for " + hook_name(h, layer) + " of width " +
                  std::to_string(lay.inner));
    const std::vector<float>* fixed = r.fixed.count(layer) ? &r.fixed.at(layer) : nullptr;
    if (fixed && int64_t(fixed->size()) != lay.R)
      fail(s, "the source's " + hook_name(h, layer) + " has " + std::to_string(fixed->size()) + " values per position, this run's " +
                  std::to_string(lay.R));
    const std::vector<std::vector<float>>* by_pos = r.by_pos.count(layer) ? &r.by_pos.at(layer) : nullptr;
    if (by_pos && !by_pos->empty() && int64_t(by_pos->front().size()) != lay.R)
      fail(s, "the source's " + hook_name(h, layer) + " has " + std::to_string(by_pos->front().size()) +
                  " values per position, this run's " + std::to_string(lay.R));
    const SourceSlices* src = r.source.count(layer) ? &r.source.at(layer) : nullptr;
    if (src && src->layout.R != lay.R)
      fail(s, "the source's " + hook_name(h, layer) + " has " + std::to_string(src->layout.R) +
                  " values per position, this run's " + std::to_string(lay.R) + " (attn.probs: patch the prefill only)");

    for (int64_t b = 0; b < lay.B; ++b) {
      if (!s.row.contains(b, lay.B)) continue;
      const int64_t L = b < int64_t(prompt_lengths_.size()) ? prompt_lengths_[size_t(b)] : lay.T;
      // mean without a reference: the mean over this row's prompt positions, taken at the
      // prefill (before any edit of this spec) and kept for the later steps.
      std::vector<float>* mean = nullptr;
      if (s.op == EditOp::Mean && !fixed) {
        auto key = std::make_pair(layer, b);
        if (!r.own_mean.count(key)) {
          if (ctx.step != 0) fail(s, "mean: no prefill seen for row " + std::to_string(b));
          std::vector<float> m(size_t(lay.R), 0.0f);
          int64_t n = 0;
          for (int64_t t2 = 0; t2 < lay.T; ++t2) {
            if (!mask.i32()[b * S + col0 + t2] || pos_ids.i32()[b * lay.T + t2] >= L) continue;
            const float* v = x + lay.offset(b, t2);
            for (int64_t i = 0; i < lay.R; ++i) m[size_t(i)] += v[lay.rest_off[size_t(i)]];
            ++n;
          }
          for (float& v : m) v /= float(std::max<int64_t>(n, 1));
          r.own_mean[key] = std::move(m);
        }
        mean = &r.own_mean[key];
      }
      for (int64_t t2 = 0; t2 < lay.T; ++t2) {
        if (!mask.i32()[b * S + col0 + t2]) continue;   // a pad column: nobody's token
        const int64_t p = pos_ids.i32()[b * lay.T + t2];
        if (!s.pos.contains(p, L)) continue;
        if (!s.step.all() && !s.step.contains(p < L ? 0 : p - L + 1, IndexSet::kOpen)) continue;
        if (by_pos && p >= int64_t(by_pos->size())) continue;   // past the steering pair's length
        const float* from = nullptr;
        if (src) {
          const int64_t sb = src->layout.B == 1 ? 0 : b;
          if (p >= src->prompt_len[size_t(sb)]) continue;   // the source holds its prompt only
          from = src->at(sb, p);
        }
        float* v = x + lay.offset(b, t2);
        for (int64_t i = 0; i < lay.R; ++i) {
          if (!rest_on[size_t(i)]) continue;
          if (!key_pos.empty()) {
            const int64_t kp = key_pos[size_t(b * S + lay.rest_last[size_t(i)])];
            if (kp < 0 || !s.key.contains(kp, L)) continue;
          }
          float& e = v[lay.rest_off[size_t(i)]];
          switch (s.op) {
            case EditOp::Zero: e = 0.0f; break;
            case EditOp::Scale: e = float(s.c) * e; break;
            case EditOp::Patch: e = from[src->layout.rest_off[size_t(i)]]; break;
            case EditOp::Mean: e = fixed ? (*fixed)[size_t(i)] : (*mean)[size_t(i)]; break;
            case EditOp::Add: {
              const float add = by_pos ? (*by_pos)[size_t(p)][size_t(i)]
                                : fixed ? (*fixed)[size_t(i)]
                                        : r.vec[size_t(int64_t(r.vec.size()) == lay.R ? i : lay.rest_last[size_t(i)])];
              e += float(s.c) * add;
              break;
            }
          }
        }
      }
    }
  }
  t = be.upload(host);
}

nlohmann::ordered_json Interventions::record() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : specs_) {
    const InterventionSpec& s = r->spec;
    nlohmann::ordered_json j;
    j["spec"] = s.text();
    j["site"] = s.site_text();
    j["op"] = edit_op_name(s.op);
    if (s.op == EditOp::Add || s.op == EditOp::Scale) j["c"] = s.c;
    if (s.aligned) j["aligned"] = true;
    // A file by its path; values given in memory by their label ("memory") and digest.
    auto named = [](const std::string& label, bool in_memory, const std::string& sha) {
      return nlohmann::ordered_json{{in_memory ? "memory" : "path", label}, {"sha256", sha}};
    };
    if (!s.source.empty()) j["source"] = named(s.source, bool(s.source_memory), r->source_sha);
    if (!s.minus.empty()) j["minus"] = named(s.minus, bool(s.minus_memory), r->minus_sha);
    if (!s.vector_file.empty()) j["vector"] = named(s.vector_file, !s.vector_values.empty(), r->vector_sha);
    out.push_back(std::move(j));
  }
  return out;
}

std::string Interventions::record_json() const { return record().dump(); }

}  // namespace lmscope
