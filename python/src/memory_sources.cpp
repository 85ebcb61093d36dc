#include "python/src/memory_sources.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

namespace pyb = pybind11;

namespace lmscope::py {

namespace {

// The hook names a spec's site covers in a model of cfg's layers ("layers.3.attn.z", ...).
std::vector<std::string> site_hook_names(const InterventionSpec& s, const ModelConfig& cfg) {
  if (!hook_info(s.hook).per_layer) return {hook_name(s.hook, -1)};
  std::vector<std::string> names;
  for (int l = 0; l < cfg.num_layers; ++l)
    if (s.layers.contains(l, cfg.num_layers)) names.push_back(hook_name(s.hook, l));
  return names;
}

std::shared_ptr<const MemorySource> memory_source(const pyb::dict& run, const std::vector<std::string>& names,
                                                  const std::string& spec) {
  for (const char* key : {"hooks", "config_json", "prompt_lengths", "padding_side"})
    if (!run.contains(key)) throw std::invalid_argument("intervention '" + spec + "': its source run has no '" + key + "'");
  auto m = std::make_shared<MemorySource>();
  m->config_json = run["config_json"].cast<std::string>();
  m->prompt_len = run["prompt_lengths"].cast<std::vector<int64_t>>();
  m->padding_side = run["padding_side"].cast<std::string>();
  const pyb::dict hooks = run["hooks"].cast<pyb::dict>();
  for (const std::string& name : names) {
    if (!hooks.contains(name)) continue;   // Interventions names what is missing, in one line
    const auto a = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(hooks[name.c_str()]);
    if (!a) throw std::invalid_argument("intervention '" + spec + "': the source's " + name + " is not an array of numbers");
    HookData d;
    d.hook = name;
    for (pyb::ssize_t i = 0; i < a.ndim(); ++i) d.shape.push_back(int64_t(a.shape(i)));
    d.values.assign(a.data(), a.data() + a.size());
    m->hooks.emplace(name, std::move(d));
  }
  return m;
}

}  // namespace

InterventionSpec spec_from_python(const pyb::handle& item, const ModelConfig& cfg) {
  if (pyb::isinstance<pyb::str>(item)) return parse_intervention(item.cast<std::string>());
  const auto pair = item.cast<std::pair<std::string, pyb::dict>>();
  InterventionSpec s = parse_intervention(pair.first);
  const pyb::dict& mem = pair.second;
  const std::vector<std::string> names = site_hook_names(s, cfg);
  if (mem.contains("source")) s.source_memory = memory_source(mem["source"].cast<pyb::dict>(), names, pair.first);
  if (mem.contains("minus")) s.minus_memory = memory_source(mem["minus"].cast<pyb::dict>(), names, pair.first);
  if (mem.contains("vector")) {
    const auto a = pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>::ensure(mem["vector"]);
    if (!a || a.ndim() != 1)
      throw std::invalid_argument("intervention '" + pair.first + "': the vector must be one-dimensional numbers");
    s.vector_values.assign(a.data(), a.data() + a.size());
    if (s.vector_values.empty()) throw std::invalid_argument("intervention '" + pair.first + "': the vector is empty");
  }
  return s;
}

}  // namespace lmscope::py
