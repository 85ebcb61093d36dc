// SafetensorsModel: finding the file(s) in a directory and routing names across shards.
#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "io_test_util.h"

using namespace iotest;
using lmscope::testing_util::TempDir;
using lmscope::SafetensorsModel;

namespace {

const char* kShard1 = "model-00001-of-00002.safetensors";
const char* kShard2 = "model-00002-of-00002.safetensors";

// Two shards: a (F32) and b (F16) in the first, c (BF16) in the second.
void write_two_shards(const TempDir& d) {
  write_file(d.file(kShard1), build_safetensors({{"a", "F32", {2}, f32_bytes({1.5f, -3})},
                                                 {"b", "F16", {2}, u16_bytes({0x3C00, 0xC000})}}));
  write_file(d.file(kShard2), build_safetensors({{"c", "BF16", {3}, u16_bytes({0x3F00, 0x4049, 0xC000})}}));
}

std::string index_json(const std::string& weight_map) {
  return "{\"metadata\":{\"total_size\":14},\"weight_map\":" + weight_map + "}";
}

}  // namespace

TEST(Sharded, RoutesNamesToShards) {
  TempDir d;
  write_two_shards(d);
  write_file(d.file("model.safetensors.index.json"),
             index_json(std::string("{\"a\":\"") + kShard1 + "\",\"b\":\"" + kShard1 + "\",\"c\":\"" + kShard2 + "\"}"));
  const SafetensorsModel m = SafetensorsModel::open(d.str());
  EXPECT_EQ(m.source(), d.file("model.safetensors.index.json"));
  EXPECT_EQ(m.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(m.file_of("c").path(), d.file(kShard2));
  EXPECT_EQ(m.tensor("a").to_f32().f32()[1], -3.0f);
  EXPECT_EQ(m.tensor("b").to_f32().f32()[0], 1.0f);
  lmscope::Tensor c = m.tensor("c").to_f32();
  EXPECT_EQ(c.f32()[0], 0.5f);
  EXPECT_EQ(c.f32()[1], 3.140625f);
  EXPECT_EQ(c.f32()[2], -2.0f);
}

TEST(Sharded, MissingShardFile) {
  TempDir d;
  write_two_shards(d);
  const std::string idx = d.file("model.safetensors.index.json");
  write_file(idx, index_json(std::string("{\"a\":\"") + kShard1 + "\",\"z\":\"model-00003-of-00002.safetensors\"}"));
  expect_error([&] { SafetensorsModel::open(d.str()); }, idx + ": ",
               {"shard 'model-00003-of-00002.safetensors'", "tensor 'z'", "does not exist"});
}

TEST(Sharded, NameNotInItsShard) {
  TempDir d;
  write_two_shards(d);
  const std::string idx = d.file("model.safetensors.index.json");
  write_file(idx, index_json(std::string("{\"a\":\"") + kShard2 + "\"}"));  // a lives in shard 1
  expect_error([&] { SafetensorsModel::open(d.str()); }, idx + ": ",
               {"tensor 'a'", kShard2, "no such tensor"});
}

TEST(Sharded, BadIndexJson) {
  TempDir d;
  const std::string idx = d.file("model.safetensors.index.json");
  write_file(idx, "{\"weight_map\": ");
  expect_error([&] { SafetensorsModel::open(d.str()); }, idx + ": ", {"invalid JSON"});
  write_file(idx, "{\"metadata\": {}}");
  expect_error([&] { SafetensorsModel::open(d.str()); }, idx + ": ", {"field 'weight_map' is missing"});
  write_file(idx, "{\"weight_map\": {\"a\": 3}}");
  expect_error([&] { SafetensorsModel::open(d.str()); }, idx + ": ", {"weight_map entry 'a' must be a string"});
}

TEST(Sharded, ABadShardNamesTheShard) {
  TempDir d;
  write_file(d.file(kShard1), raw_safetensors("not json", ""));
  write_file(d.file("model.safetensors.index.json"), index_json(std::string("{\"a\":\"") + kShard1 + "\"}"));
  expect_error([&] { SafetensorsModel::open(d.str()); }, d.file(kShard1) + ": ", {"header is not valid JSON"});
}

TEST(Sharded, DirectoryWithNeither) {
  TempDir d;
  expect_error([&] { SafetensorsModel::open(d.str()); }, d.str() + ": ",
               {"no model.safetensors or model.safetensors.index.json"});
}

TEST(Sharded, SingleFilePreferredOverIndexAndFilePathAccepted) {
  TempDir d;
  write_file(d.file("model.safetensors"), build_safetensors({f32_tensor("only", {2}, 4)}));
  write_file(d.file("model.safetensors.index.json"), "this index is never read");
  const SafetensorsModel m = SafetensorsModel::open(d.str());
  EXPECT_EQ(m.source(), d.file("model.safetensors"));
  EXPECT_EQ(m.tensor("only").f32()[0], 4.0f);
  EXPECT_TRUE(SafetensorsModel::open(d.file("model.safetensors")).has("only"));
  expect_error([&] { m.tensor("other"); }, d.file("model.safetensors") + ": ", {"tensor 'other' is missing"});
}
