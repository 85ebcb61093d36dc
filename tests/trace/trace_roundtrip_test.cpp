// TraceWriter -> TraceReader: shapes, axes, attributes, ints vs floats, forward order.
#include <gtest/gtest.h>

#include <cstdio>

#include "io/hdf5.h"
#include "tests/test_util.h"
#include "trace/hooks.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
using namespace lmscope::testing_util;

TEST(TraceRoundTrip, WriteThenRead) {
  TempDir dir;
  std::string path = dir.file("t.h5");
  std::vector<float> q(2 * 3 * 4 * 5);
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(i) / 7.f;
  std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> gen = {9, 8, 7, 6};
  {
    TraceWriter w(path);
    w.set_root_attr("producer", "lmscope test");
    w.set_root_attr("use_cache", 1);
    w.set_root_attr("temperature", 0.7);
    w.set_root_attr("gqa_map", std::vector<int32_t>{0, 0, 1, 1});
    w.set_root_attr("config_json", std::string("{\"hidden_size\": 8}"));
    w.begin_step({0, "prefill", true, 0, 3, 3});
    // written out of forward order on purpose: the reader sorts by hook_sort_key
    w.write("logits", "B,T,V", {2, 3, 4}, q.data());
    // Shapes that agree (the reader checks them on open): B = 2, T = S = 3, H = Hkv = 4, hd = 5.
    w.write("layers.10.attn.q", "B,H,T,hd", {2, 4, 3, 5}, q.data());
    w.write("layers.2.attn.q", "B,H,T,hd", {2, 4, 3, 5}, q.data());
    w.write("kv.2.k", "B,Hkv,S,hd", {2, 4, 3, 5}, q.data());
    w.write("tokens.input_ids", "B,T", {2, 3}, ids.data());
    w.write("sample.chosen", "B", {2}, ids.data());
    w.set_step_group_attr("sample", "temperature", 0.5);
    w.set_step_group_attr("sample", "top_k", 40);
    w.set_step_group_attr("sample", "kind", "greedy");
    w.begin_step({1, "decode", true, 3, 1, 4});
    w.write("tokens.input_ids", "B,T", {2, 1}, ids.data());
    w.write_root_dataset("generated_ids", {2, 2}, gen.data());
    w.write_root_dataset("tokenizer/row_0/scores", {3}, q.data());   // nested, float
    w.commit();
    EXPECT_TRUE(w.committed());
  }
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(e.path().string(), path) << "left behind";   // the trace, no temporary

  TraceReader r(path);
  EXPECT_EQ(r.root_attr_string("format"), "lmscope-trace");
  EXPECT_EQ(r.root_attr_int("format_version"), kTraceFormatVersion);
  EXPECT_EQ(r.root_attr_int("complete"), 1);
  EXPECT_EQ(r.root_attr_int("n_steps"), 2);
  EXPECT_EQ(r.root_attr_string("producer"), "lmscope test");
  EXPECT_EQ(r.root_attr_int("use_cache"), 1);
  EXPECT_DOUBLE_EQ(r.root_attr_double("temperature"), 0.7);
  EXPECT_EQ(r.root_attr_ints("gqa_map"), (std::vector<int32_t>{0, 0, 1, 1}));
  std::string j = r.root_attrs_json();
  EXPECT_NE(j.find("\"gqa_map\":[0,0,1,1]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"config_json\":\"{\\\"hidden_size\\\": 8}\""), std::string::npos) << j;

  ASSERT_EQ(r.n_steps(), 2);
  StepInfo s0 = r.step_info(0), s1 = r.step_info(1);
  EXPECT_EQ(s0.phase, "prefill");
  EXPECT_TRUE(s0.use_cache);
  EXPECT_EQ(s0.T, 3);
  EXPECT_EQ(s1.phase, "decode");
  EXPECT_EQ(s1.past_length, 3);
  EXPECT_EQ(s1.S, 4);

  EXPECT_EQ(r.hooks(0), (std::vector<std::string>{"tokens.input_ids", "layers.2.attn.q", "kv.2.k",
                                                  "layers.10.attn.q", "logits", "sample.chosen"}));
  EXPECT_EQ(r.hooks(1), std::vector<std::string>{"tokens.input_ids"});
  EXPECT_TRUE(r.has_hook(0, "kv.2.k"));
  EXPECT_FALSE(r.has_hook(1, "kv.2.k"));
  EXPECT_FALSE(r.has_hook(0, "layers.2"));   // a group, not a hook
  EXPECT_FALSE(r.has_hook(7, "logits"));

  HookData d = r.read(0, "layers.2.attn.q");
  EXPECT_EQ(d.hook, "layers.2.attn.q");
  EXPECT_EQ(d.axes, (std::vector<std::string>{"B", "H", "T", "hd"}));
  EXPECT_EQ(d.axis("T"), 2);
  EXPECT_EQ(d.shape, (Shape{2, 4, 3, 5}));
  EXPECT_FALSE(d.is_int);
  for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(d.values[i], double(q[i]));

  HookData t = r.read(0, "tokens.input_ids");
  EXPECT_TRUE(t.is_int);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  HookData c = r.read(0, "sample.chosen");
  EXPECT_EQ(c.axes, std::vector<std::string>{"B"});
  EXPECT_EQ(c.shape, Shape{2});

  ASSERT_TRUE(r.has_generated_ids());
  HookData g = r.generated_ids();
  EXPECT_EQ(g.shape, (Shape{2, 2}));
  EXPECT_TRUE(g.is_int);
  EXPECT_EQ(g.values, (std::vector<double>{9, 8, 7, 6}));
  EXPECT_THROW(r.read(0, "layers.3.attn.q"), std::runtime_error);

  h5::File f = h5::File::open_read(path);
  h5::DatasetData tok = f.root().read_dataset("tokenizer/row_0/scores");
  EXPECT_FALSE(tok.is_int);
  EXPECT_EQ(tok.values, (std::vector<double>{q[0], q[1], q[2]}));
}

TEST(TraceRoundTrip, StepGroupAttributes) {
  TempDir dir;
  std::string path = dir.file("s.h5");
  write_synthetic_trace(path);
  h5::File f = h5::File::open_read(path);
  h5::Group s = f.root().open_group("step_0001/sample");
  EXPECT_EQ(s.attr_int("do_sample"), 0);
  EXPECT_DOUBLE_EQ(s.attr_double("temperature"), 1.0);
  h5::Dataset d = f.root().open_dataset("step_0000/layers/0/attn/scores");
  EXPECT_EQ(d.attr_string("hook"), "layers.0.attn.scores");
  EXPECT_EQ(d.attr_string("axes"), "B,H,T,S");
}

TEST(TraceRoundTrip, WriterRejectsMisuse) {
  TempDir dir;
  TraceWriter w(dir.file("m.h5"));
  float x[6] = {};
  EXPECT_THROW(w.write("embed", "B,T,D", {1, 2, 3}, x), std::logic_error);   // before begin_step
  w.begin_step({0, "prefill", false, 0, 2, 2});
  EXPECT_THROW(w.write("embed", "B,T", {1, 2, 3}, x), std::logic_error);     // axes vs shape
  EXPECT_THROW(w.write("bad..name", "B", {6}, x), std::invalid_argument);
  EXPECT_THROW(w.write("a/b", "B", {6}, x), std::invalid_argument);
  w.write("embed", "B,T,D", {1, 2, 3}, x);
  EXPECT_THROW(w.write("embed", "B,T,D", {1, 2, 3}, x), std::runtime_error);   // written twice
}

TEST(TraceRoundTrip, H5dumpReadsTheHeader) {
  // scripts/setup.sh installs h5dump (hdf5-tools) and the README uses it: missing is a broken setup.
  ASSERT_EQ(std::system("command -v h5dump > /dev/null 2>&1"), 0) << "h5dump not installed (scripts/setup.sh installs hdf5-tools)";
  TempDir dir;
  std::string path = dir.file("d.h5");
  write_synthetic_trace(path);
  std::string out = dir.file("dump.txt");
  int rc = std::system(("h5dump -H '" + path + "' > '" + out + "' 2>&1").c_str());
  ASSERT_EQ(rc, 0) << read_text(out);
  std::string text = read_text(out);
  EXPECT_NE(text.find("GROUP \"step_0000\""), std::string::npos) << text;
  EXPECT_NE(text.find("DATASET \"scores\""), std::string::npos) << text;
  EXPECT_NE(text.find("ATTRIBUTE \"hook\""), std::string::npos) << text;
  EXPECT_NE(text.find("ATTRIBUTE \"format\""), std::string::npos) << text;
  // and a value, as a person would look at it
  rc = std::system(("h5dump -a /format '" + path + "' > '" + out + "' 2>&1").c_str());
  ASSERT_EQ(rc, 0) << read_text(out);
  EXPECT_NE(read_text(out).find("\"lmscope-trace\""), std::string::npos) << read_text(out);
}
