// GGUF: the input is opened as a model (header, metadata, tensor infos, every tensor
// dequantized, the config and layer wiring) and as a tokenizer (vocabulary, merges, chat
// template). Seeds: fuzz/corpus/gguf.
#include <stdexcept>

#include "fuzz/fuzz_input.h"
#include "model/gguf_model.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write("model.gguf", data, size);
  try {
    lmscope::load_gguf_model(path);
  } catch (const std::exception&) {
  }
  try {
    const lmscope::tok::Tokenizer t = lmscope::tok::Tokenizer::load(path);
    t.encode("Hello world, 123 héllo");
  } catch (const std::exception&) {
  }
  return 0;
}
