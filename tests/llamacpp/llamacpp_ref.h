// llama.cpp's logits (scripts/llamacpp_logits.py) as a reference for the CPU engine: the
// reference file, the same token ids run through our Decoder (one prefill with every
// position's logits, then llama.cpp's greedy ids fed one at a time: the decode path), and the
// per-row differences.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "generate/batch.h"
#include "io/hdf5.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "model/load_model.h"
#include "trace/trace_reader.h"

namespace lmscope::llamacpp {

// Logits rows [R,V]: the prompt's T rows, then one per decoded token.
struct Logits {
  int64_t vocab = 0;
  int64_t prompt_rows = 0;
  std::vector<float> rows;
  const float* row(int64_t r) const { return rows.data() + r * vocab; }
  int64_t n_rows() const { return vocab ? int64_t(rows.size()) / vocab : 0; }
};

struct Reference {
  std::vector<int32_t> input_ids, decode_ids;
  Logits logits;
  std::string gguf_sha256;
};

inline std::vector<int32_t> read_ids(const h5::Group& g, const std::string& name) {
  h5::DatasetData d = g.read_dataset(name);
  return std::vector<int32_t>(d.values.begin(), d.values.end());
}

inline Reference read_reference(const std::string& path) {
  h5::File f = h5::File::open_read(path);
  const h5::Group& root = f.root();
  Reference r;
  r.input_ids = read_ids(root, "input_ids");
  r.decode_ids = read_ids(root, "decode_ids");
  r.gguf_sha256 = root.attr_string("gguf_sha256");
  for (const char* name : {"prompt_logits", "decode_logits"}) {
    h5::DatasetData d = root.read_dataset(name);
    if (d.shape.size() != 2) throw std::runtime_error(path + ": " + name + " is not [rows, vocab]");
    r.logits.vocab = d.shape[1];
    r.logits.rows.insert(r.logits.rows.end(), d.values.begin(), d.values.end());
  }
  r.logits.prompt_rows = int64_t(r.input_ids.size());
  if (r.logits.n_rows() != int64_t(r.input_ids.size() + r.decode_ids.size()))
    throw std::runtime_error(path + ": logits rows do not match input_ids + decode_ids");
  return r;
}

// Our logits for the reference's ids on `backend`: prefill (all positions), then each decode
// id through the KV cache, one token per forward, as llama.cpp ran them.
inline Logits run_ours(const LoadedModel& m, Backend& backend, const Reference& ref) {
  Decoder dec(m.cfg, m.weights, backend);
  const int64_t V = m.cfg.vocab_size, T = int64_t(ref.input_ids.size());
  KVCache cache(backend, m.cfg, 1, T + int64_t(ref.decode_ids.size()));
  Batch b = Batch::from_prompts({ref.input_ids}, PaddingSide::Left, 0);
  Logits out{V, T, {}};
  Tensor l = dec.forward({b.ids_tensor(), b.position_ids(), b.mask_tensor()}, &cache, nullptr, LogitsFor::AllPositions);
  out.rows.assign(l.f32(), l.f32() + l.numel());
  for (int32_t id : ref.decode_ids) {
    b.append({id});
    const int64_t from = b.cols() - 1;
    l = dec.forward({b.ids_tensor(from), b.position_ids(from), b.mask_tensor()}, &cache, nullptr,
                    LogitsFor::LastPosition);
    out.rows.insert(out.rows.end(), l.f32(), l.f32() + l.numel());
  }
  return out;
}

// The logits of an lmscope-trace run with `--hooks logits`, its first `steps` steps: the
// prefill's [1,T,V], then [1,1,V] per decode step.
inline Logits trace_logits(const std::string& path, int steps) {
  TraceReader t(path);
  if (t.n_steps() < steps) throw std::runtime_error(path + ": fewer steps than " + std::to_string(steps));
  Logits out;
  for (int s = 0; s < steps; ++s) {
    const HookData h = t.read(s, "logits");
    out.vocab = h.shape.back();
    if (s == 0) out.prompt_rows = h.shape[1];
    out.rows.insert(out.rows.end(), h.values.begin(), h.values.end());
  }
  return out;
}

// Row by row: max |a - b| over the vocabulary, whether the argmaxes agree, and the reference
// b's own margin between its best and second-best logit (how near a tie its choice is).
struct RowDiff {
  float max_abs = 0;
  bool top1_equal = false;
  float ref_margin = 0;
};

inline int64_t argmax(const float* x, int64_t n) { return std::max_element(x, x + n) - x; }

inline std::vector<RowDiff> row_diffs(const Logits& a, const Logits& b) {
  std::vector<RowDiff> out;
  for (int64_t r = 0; r < std::min(a.n_rows(), b.n_rows()); ++r) {
    RowDiff d;
    for (int64_t v = 0; v < a.vocab; ++v) d.max_abs = std::max(d.max_abs, std::fabs(a.row(r)[v] - b.row(r)[v]));
    d.top1_equal = argmax(a.row(r), a.vocab) == argmax(b.row(r), b.vocab);
    float best = -INFINITY, second = -INFINITY;
    for (int64_t v = 0; v < b.vocab; ++v) {
      const float x = b.row(r)[v];
      if (x > best) second = best, best = x;
      else if (x > second) second = x;
    }
    d.ref_margin = best - second;
    out.push_back(d);
  }
  return out;
}

// A top-1 disagreement counts only where the reference's own choice is clear: its top-2
// margin is larger than the logit tolerance `tol` (two runs that may each differ by tol can
// order a nearer pair either way).
inline bool top1_holds(const RowDiff& d, float tol) { return d.top1_equal || d.ref_margin <= tol; }

inline float max_over(const std::vector<RowDiff>& d) {
  float m = 0;
  for (const RowDiff& r : d) m = std::max(m, r.max_abs);
  return m;
}

}  // namespace lmscope::llamacpp
