// Inputs that are not regular files, and sizes a small file claims: each is refused in one
// line before anything blocks or is allocated by the claim (a FIFO would block open() forever,
// /dev/zero would be read until memory runs out, a layer count of 10^7 took 9 GB).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "io_test_util.h"
#include "model/load_model.h"
#include "model/weights.h"

using namespace iotest;
using lmscope::testing_util::TempDir;

namespace {

std::string load_error(const std::string& path) {
  try {
    lmscope::load_model(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SpecialFiles, FifoAsAModelFileIsRefusedWithoutBlocking) {
  TempDir d;
  // a FIFO as the GGUF, as model.safetensors, as config.json (nobody ever writes to them)
  ASSERT_EQ(::mkfifo(d.file("model.gguf").c_str(), 0600), 0);
  EXPECT_EQ(load_error(d.file("model.gguf")), d.file("model.gguf") + ": is not a regular file (a FIFO)");

  TinySpec spec;
  TempDir st;
  write_file(st.file("config.json"), tiny_config_json(spec));
  ASSERT_EQ(::mkfifo(st.file("model.safetensors").c_str(), 0600), 0);
  EXPECT_NE(load_error(st.str()).find("model.safetensors: is not a regular file (a FIFO)"), std::string::npos);

  TempDir cfg;
  ASSERT_EQ(::mkfifo(cfg.file("config.json").c_str(), 0600), 0);
  EXPECT_EQ(load_error(cfg.str()), cfg.file("config.json") + ": is not a regular file (a FIFO)");
}

TEST(SpecialFiles, DeviceAsAModelIsRefused) {
  EXPECT_EQ(load_error("/dev/zero"), "/dev/zero: is not a regular file (a character device)");
}

TEST(SpecialFiles, LayerCountPastTheTensorsIsRefusedBeforeAllocating) {
  TempDir d;
  TinySpec spec;
  auto ts = tiny_tensors(spec);
  std::string cfg = tiny_config_json(spec);
  const std::string two = "\"num_hidden_layers\":2";
  cfg.replace(cfg.find(two), two.size(), "\"num_hidden_layers\":10000000");
  write_file(d.file("config.json"), cfg);
  write_file(d.file("model.safetensors"), build_safetensors(values(ts)));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(load_error(d.str()), d.str() + ": num_hidden_layers is 10000000 but tensor "
                                           "'model.layers.9999999.input_layernorm.weight' is missing");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}
