#include "experiments/path_patching.h"

#include <chrono>
#include <regex>
#include <stdexcept>

#include "intervene/interventions.h"
#include "model/decoder.h"

namespace lmscope {

namespace {

std::string receiver_text(const PathPatchOptions& o) {
  return hook_name(o.receiver, o.receiver_layer) + "[head=" + std::to_string(o.receiver_head) + "]";
}

}  // namespace

void parse_path_receiver(const std::string& text, const ModelConfig& cfg, PathPatchOptions& opt) {
  static const std::regex form(R"(layers\.(\d{1,6})\.attn\.(q|k|v)\[head=(\d{1,6})\])");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw std::runtime_error("--path-to '" + text + "': expected layers.L.attn.q[head=H] (or attn.k, attn.v: a KV head)");
  opt.receiver = m[2] == "q" ? Hook::AttnQ : m[2] == "k" ? Hook::AttnK : Hook::AttnV;
  opt.receiver_layer = std::stoi(m[1]);
  opt.receiver_head = std::stoi(m[3]);
  const int heads = opt.receiver == Hook::AttnQ ? cfg.num_heads : cfg.num_kv_heads;
  if (opt.receiver_layer < 1 || opt.receiver_layer >= cfg.num_layers)
    throw std::runtime_error("--path-to '" + text + "': the receiver's layer must be 1.." + std::to_string(cfg.num_layers - 1) +
                             " (its senders are the heads of the layers before it)");
  if (opt.receiver_head >= heads)
    throw std::runtime_error("--path-to '" + text + "': head " + std::to_string(opt.receiver_head) + " is outside 0.." +
                             std::to_string(heads - 1));
}

PatchSweep run_path_patching(const ModelContext& m, const PathPatchOptions& opt) {
  const ModelConfig& cfg = m.cfg();
  if (opt.clean.size() != opt.corrupt.size())
    throw std::runtime_error("clean prompt has " + std::to_string(opt.clean.size()) + " tokens, corrupted " +
                             std::to_string(opt.corrupt.size()) + ": patching needs prompts of one length");
  if (opt.rows_per_forward < 1) throw std::runtime_error("--rows-per-forward must be at least 1");
  Decoder& dec = *m.decoder;
  const int64_t V = cfg.vocab_size;
  const bool last_only = opt.metric.last_position_only();
  PatchSweep out = patch_sweep_ends(dec, opt.clean, opt.corrupt, opt.metric, V);
  const double span = out.clean_metric - out.corrupt_metric;

  // Both runs' head outputs: the sender's source (clean) and the frozen heads' (corrupted).
  TemporaryTrace temporary;
  const std::string clean_z = temporary.path("clean.h5"), corrupt_z = temporary.path("corrupt.h5");
  for (const auto& [prompt, file] : {std::pair{opt.clean, clean_z}, std::pair{opt.corrupt, corrupt_z}}) {
    GenerateOptions g;
    g.prompts = {prompt};
    g.max_new_tokens = 1;
    run_traced(m, g, HookSet("tokens.*,layers.*.attn.z", "", cfg.num_layers), file);
  }
  auto spec = [](const std::string& text, const std::string& source) {
    InterventionSpec s = parse_intervention(text);
    s.source = source;
    return s;
  };

  PatchGrid grid;
  grid.site = "attn.z->" + receiver_text(opt);
  grid.columns = "head";
  for (int h = 0; h < cfg.num_heads; ++h) grid.column_index.push_back(h);
  grid.metric.assign(size_t(opt.receiver_layer), std::vector<double>(size_t(cfg.num_heads), 0.0));
  grid.normalized = grid.metric;
  const int senders = opt.receiver_layer * cfg.num_heads;
  const std::string receiver = hook_name(opt.receiver, opt.receiver_layer);
  const auto t0 = std::chrono::steady_clock::now();
  for (int first = 0; first < senders; first += opt.rows_per_forward) {
    const int n = std::min(senders - first, opt.rows_per_forward);
    // step 1: one sender per row, the heads between frozen; the receiver's input traced
    std::vector<InterventionSpec> specs;
    for (int r = 0; r < n; ++r) {
      const int layer = (first + r) / cfg.num_heads, head = (first + r) % cfg.num_heads;
      const std::string row = ",row=" + std::to_string(r) + "]";
      specs.push_back(spec("layers." + std::to_string(layer) + ".attn.z[head=" + std::to_string(head) + row + "=patch(x.h5)", clean_z));
      if (layer + 1 < opt.receiver_layer)
        specs.push_back(spec("layers." + std::to_string(layer + 1) + ":" + std::to_string(opt.receiver_layer) + ".attn.z[row=" +
                                 std::to_string(r) + "]=patch(x.h5)",
                             corrupt_z));
    }
    Interventions senders_in(std::move(specs), cfg);
    const std::string received = temporary.path("received_" + std::to_string(first) + ".h5");
    GenerateOptions g;
    g.prompts.assign(size_t(n), opt.corrupt);
    g.max_new_tokens = 1;
    g.editor = &senders_in;
    run_traced(m, g, HookSet("tokens.*," + receiver, "", cfg.num_layers), received);
    // step 2: the receiver head's input from step 1, row by row; nothing else changed
    std::vector<InterventionSpec> into;
    for (int r = 0; r < n; ++r)
      into.push_back(spec(receiver + "[head=" + std::to_string(opt.receiver_head) + ",row=" + std::to_string(r) + "]=patch(x.h5)",
                          received));
    Interventions receiver_in(std::move(into), cfg);
    const auto logits = patch_row_logits(dec, std::vector<std::vector<int32_t>>(size_t(n), opt.corrupt), &receiver_in, last_only);
    out.forwards += 2;
    for (int r = 0; r < n; ++r) {
      const int layer = (first + r) / cfg.num_heads, head = (first + r) % cfg.num_heads;
      const double v = patch_row_metric(opt.metric, logits[size_t(r)], opt.corrupt, V);
      grid.metric[size_t(layer)][size_t(head)] = v;
      grid.normalized[size_t(layer)][size_t(head)] = span != 0 ? (v - out.corrupt_metric) / span : NAN;
    }
  }
  out.cells = senders;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.grids.push_back(std::move(grid));
  return out;
}

}  // namespace lmscope
