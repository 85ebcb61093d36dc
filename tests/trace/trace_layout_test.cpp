// The shapes a trace's readers index by (trace/trace_layout.h), checked once when the file is
// opened: each crafted trace here crashed lmscope-report or lmscope-step before (a SIGSEGV, a
// heap-buffer-overflow, a float-to-int conversion of NaN) and must now be refused in one line
// naming the file, the step and the hook.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>

#include "tests/crafted_trace.h"
#include "trace/trace_layout.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;


TEST(TraceLayout, TheSyntheticTraceAndTheGoldensOpen) {
  TempDir dir;
  write_synthetic_trace(dir.file("t.h5"));
  EXPECT_NO_THROW(TraceReader(dir.file("t.h5")));
  for (const char* g : {"tiny-qwen2-a", "tiny-qwen2-b", "tiny-qwen2-c", "tiny-qwen2-r", "tiny-llama-a", "tiny-qwen2-bf16-a"})
    EXPECT_NO_THROW(TraceReader(std::string(LMSCOPE_SOURCE_DIR) + "/golden/traces/" + g + ".h5")) << g;
  // lmscope-hf-trace --logits-rows last: logits [B,1,V] (rows = last) in a 27-token prefill
  for (const char* g : {"smollm2-chat-0", "smollm2-chat-1"})
    EXPECT_NO_THROW(TraceReader(std::string(LMSCOPE_SOURCE_DIR) + "/golden/smollm2/" + g + ".h5")) << g;
}

TEST(TraceLayout, AnEmptyAxisIsRefused) {
  TempDir dir;
  const std::string p = dir.file("t0.h5"), v = dir.file("v0.h5"), ids = dir.file("ids0.h5");
  write_crafted_trace(p, [](H5Edit& e) { e.replace("step_0000/logits", "logits", "B,T,V", {2, 0, 16}); });
  expect_has(trace_open_error(p), {p, "step_0000 logits: axis T is 0 (every axis is at least 1)"});
  write_crafted_trace(v, [](H5Edit& e) { e.replace("step_0001/logits", "logits", "B,T,V", {2, 1, 0}); });
  expect_has(trace_open_error(v), {v, "step_0001 logits: axis V is 0"});
  write_crafted_trace(ids, [](H5Edit& e) { e.replace("step_0000/tokens/input_ids", "tokens.input_ids", "B,T", {2, 0}, 1, true); });
  expect_has(trace_open_error(ids), {ids, "step_0000 tokens.input_ids: axis T is 0"});
}

TEST(TraceLayout, AxesMustAgreeAcrossTheTrace) {
  TempDir dir;
  const std::string gen = dir.file("gen.h5"), t = dir.file("t.h5"), v = dir.file("v.h5"), rank = dir.file("rank.h5");
  // generated_ids of another batch size: row_columns read past the end of it.
  write_crafted_trace(gen, [](H5Edit& e) { e.replace("generated_ids", "", "", {3, 2}, 5, true); });
  expect_has(trace_open_error(gen), {gen, "generated_ids: axis B is 3 but step_0000 embed says 2"});
  // T against the step's own attribute (4 query tokens in the prefill)
  write_crafted_trace(t, [](H5Edit& e) { e.replace("step_0000/embed", "embed", "B,T,D", {2, 3, 8}); });
  expect_has(trace_open_error(t), {t, "step_0000 embed: axis T is 3 but the step's T attribute says 4"});
  // V against another step's logits
  write_crafted_trace(v, [](H5Edit& e) { e.replace("step_0001/logits", "logits", "B,T,V", {2, 1, 17}); });
  expect_has(trace_open_error(v), {v, "step_0001 logits: axis V is 17 but step_0000 logits says 16"});
  // a rank other than docs/hooks.md's, with matching axes names
  write_crafted_trace(rank, [](H5Edit& e) { e.replace("step_0000/logits", "logits", "B,V", {2, 16}); });
  expect_has(trace_open_error(rank), {rank, "step_0000 logits: shape [2,16] has rank 2, not that of [B,T,V]"});
}

TEST(TraceLayout, RootAttributesBoundTheShapes) {
  TempDir dir;
  const std::string b = dir.file("b.h5"), v = dir.file("v.h5"), huge_t = dir.file("T.h5"), nsteps = dir.file("n.h5");
  write_crafted_trace(b, [](H5Edit& e) { e.string_attr("/", "prompts", "[[1,2,3,4]]"); });
  expect_has(trace_open_error(b), {b, "axis B is 2 but the prompts attribute says 1"});
  write_crafted_trace(v, [](H5Edit& e) { e.string_attr("/", "config_json", "{\"vocab_size\": 32}"); });
  expect_has(trace_open_error(v), {v, "logits: axis V is 16 but config_json's vocab_size says 32"});
  // T = 2^31 - 1 made the report size a table of 2^31 columns (vector::_M_fill_insert).
  write_crafted_trace(huge_t, [](H5Edit& e) { e.attr("/step_0001", "T", 2147483647.0, true); });
  expect_has(trace_open_error(huge_t), {huge_t, "step_0001: attribute T = 2147483647 is not in 1..1048576"});
  write_crafted_trace(nsteps, [](H5Edit& e) { e.attr("/", "n_steps", 1099511627776.0, true); });
  expect_has(trace_open_error(nsteps), {nsteps, "has n_steps = 1099511627776 but 2 step groups"});
}

TEST(TraceLayout, NanWhereAnIntegerBelongs) {
  TempDir dir;
  const std::string complete = dir.file("complete.h5"), ids = dir.file("ids.h5");
  write_crafted_trace(complete, [](H5Edit& e) { e.attr("/", "complete", NAN, false); });
  expect_has(trace_open_error(complete), {complete, "attribute 'complete' is nan, not an integer"});
  // input ids stored as float NaN: opens (the shape is sound), refused where the ids are read
  write_crafted_trace(ids, [](H5Edit& e) { e.replace("step_0000/tokens/input_ids", "tokens.input_ids", "B,T", {2, 4}, NAN); });
  TraceReader r(ids);
  try {
    r.read(0, "tokens.input_ids");
    ADD_FAILURE() << "read NaN ids";
  } catch (const std::exception& e) {
    expect_has(e.what(), {ids, "step_0000 tokens.input_ids: value nan at index 0 is not a token id"});
  }
  EXPECT_THROW(check_ids({1, 2, 3e10}, "x"), std::runtime_error);
  EXPECT_THROW(check_ids({0.5}, "x"), std::runtime_error);
  EXPECT_NO_THROW(check_ids({0, -1, 2147483647}, "x"));
}

TEST(TraceLayout, AStepGroupLinkedTwiceIsRefused) {
  TempDir dir;
  const std::string p = dir.file("hard.h5");
  write_crafted_trace(p, [](H5Edit& e) {
    H5Ldelete(e.file(), "step_0001", H5P_DEFAULT);
    H5Lcreate_hard(e.file(), "step_0000", e.file(), "step_0001", H5P_DEFAULT, H5P_DEFAULT);
  });
  expect_has(trace_open_error(p), {p, "step_0001 is a second link to another step's group"});
}

TEST(TraceLayout, ExternalLinksAreNeverFollowed) {
  TempDir dir;
  const std::string other = dir.file("other.h5"), p = dir.file("ext.h5"), fifo = dir.file("fifo.h5"), q = dir.file("ext_fifo.h5");
  write_synthetic_trace(other);
  // a hook borrowed from another trace: the report would show that file's data as this one's
  write_crafted_trace(p, [&](H5Edit& e) {
    H5Ldelete(e.file(), "step_0000/logits", H5P_DEFAULT);
    H5Lcreate_external(other.c_str(), "/step_0000/logits", e.file(), "step_0000/logits", H5P_DEFAULT, H5P_DEFAULT);
  });
  expect_has(trace_open_error(p), {p, "/step_0000/logits: an external link (into another file); traces never hold one"});
  // a link into a FIFO stalled every reader for 60 s: never opened now
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_crafted_trace(q, [&](H5Edit& e) {
    H5Lcreate_external(fifo.c_str(), "/x", e.file(), "tokenizer", H5P_DEFAULT, H5P_DEFAULT);
  });
  expect_has(trace_open_error(q), {q, "/tokenizer: an external link"});
}
