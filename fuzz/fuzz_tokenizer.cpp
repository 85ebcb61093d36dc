// tokenizer.json + chat template: the input is loaded as a tokenizer.json (then encodes and
// decodes a fixed text) and rendered as a Jinja chat template with two messages.
// Seeds: fuzz/corpus/tokenizer.
#include <stdexcept>

#include "fuzz/fuzz_input.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::filesystem::create_directories(fuzz::scratch() / "tok");
    fuzz::write("tok/tokenizer.json", data, size);
    const lmscope::tok::Tokenizer t = lmscope::tok::Tokenizer::load((fuzz::scratch() / "tok").string());
    t.decode(t.encode("Hello world, 123 héllo <|im_start|>"));
  } catch (const std::exception&) {
  }
  try {
    lmscope::tok::render_chat_template(text, {{"user", "Hi"}, {"assistant", "Hello!"}}, true,
                                       {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  } catch (const std::exception&) {
  }
  return 0;
}
