// safetensors + config.json: the input is both a model.safetensors (opened, every tensor read
// and converted) and a config.json text (parsed). Seeds: fuzz/corpus/safetensors.
#include <stdexcept>

#include "fuzz/fuzz_input.h"
#include "io/safetensors.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    lmscope::parse_model_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  } catch (const std::exception&) {
  }
  try {
    const lmscope::SafetensorsFile f = lmscope::SafetensorsFile::open(fuzz::write("model.safetensors", data, size));
    for (const std::string& name : f.names()) {
      try {
        lmscope::Tensor t = f.tensor(name).to_f32();
        volatile float sink = t.numel() ? t.f32()[t.numel() - 1] : 0.0f;
        (void)sink;
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}
