// lmscope-trace --grad: grad.<hook> datasets next to the hooks asked for, equal to torch
// autograd's within docs/tolerances.md's "Gradients" bound; lmscope-diff compares them; bad
// input is one line and a non-zero exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "io/hdf5.h"
#include "tests/cli/cli_test_util.h"

using lmscope::testing_util::TempDir;
namespace h5 = lmscope::h5;

namespace {

const std::string kTiny = kSourceDir + "/golden/models/tiny-qwen2";
// golden/grad/manifest.json's tiny-qwen2-logit-diff case
const std::string kIds = "330,749,537,264,935,314,267,681,289,295,16";
const std::string kMetric = "logit_diff:pos=-1:549,593";

std::string trace_grad(const std::string& out, const std::string& metric, const std::string& extra = "") {
  const auto r = tool("lmscope-trace", "-q --model " + kTiny + " --prompt-ids " + kIds + " --grad '" + metric +
                                           "' --hooks 'layers.1.*,embed' --out " + out + " " + extra);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

}  // namespace

TEST(GradCli, StoresGradientsNextToTheHooksEqualToTorch) {
  TempDir tmp;
  const std::string out = tmp.file("g.h5");
  const std::string printed = trace_grad(out, kMetric);
  EXPECT_NE(printed.find("grad metric: " + kMetric + " = "), std::string::npos) << printed;

  const h5::File ours = h5::File::open_read(out);
  const h5::File ref = h5::File::open_read(kSourceDir + "/golden/grad/tiny-qwen2-logit-diff.h5");
  EXPECT_EQ(ours.root().attr_string("grad_metric"), kMetric);
  EXPECT_NEAR(ours.root().attr_double("grad_metric_value"), ref.root().attr_double("metric"), 1e-4);
  int compared = 0;
  for (const std::string hook : {"embed", "layers.1.resid_pre", "layers.1.attn.q_rope", "layers.1.attn.probs",
                                 "layers.1.attn.z", "layers.1.ffn.act", "layers.1.resid_post"}) {
    SCOPED_TRACE(hook);
    std::string path = "step_0000/grad." + hook;
    std::replace(path.begin(), path.end(), '.', '/');
    const h5::Dataset ds = ours.root().open_dataset(path);
    EXPECT_EQ(ds.attr_string("hook"), "grad." + hook);
    const h5::DatasetData a = ds.read(), b = ref.root().read_dataset("grad/" + hook);
    ASSERT_EQ(a.shape, b.shape);
    double max_ref = 0, max_diff = 0;
    for (size_t i = 0; i < a.values.size(); ++i) {
      max_ref = std::max(max_ref, std::fabs(b.values[i]));
      max_diff = std::max(max_diff, std::fabs(a.values[i] - b.values[i]));
    }
    EXPECT_LE(max_diff, 2e-4 * max_ref);   // docs/tolerances.md, "Gradients"
    ++compared;
  }
  EXPECT_EQ(compared, 7);
  // Only the hooks asked for: no gradient of layer 0's q.
  EXPECT_FALSE(ours.root().exists("step_0000/grad/layers/0"));
}

TEST(GradCli, LmscopeDiffComparesTheGradients) {
  TempDir tmp;
  trace_grad(tmp.file("a.h5"), kMetric);
  trace_grad(tmp.file("b.h5"), kMetric, "--no-cache");
  trace_grad(tmp.file("c.h5"), "logprob:pos=-1:549");
  const auto same = tool("lmscope-diff", tmp.file("a.h5") + " " + tmp.file("b.h5"));
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_NE(same.out.find("grad.layers.1.attn.q_rope"), std::string::npos) << same.out;
  // Another metric: the same activations, other gradients.
  const auto other = tool("lmscope-diff", tmp.file("a.h5") + " " + tmp.file("c.h5"));
  EXPECT_EQ(other.code, 1) << other.out;
  for (const std::string line : {"grad.embed ", "grad.layers.1.resid_pre "}) {
    const size_t at = other.out.find(line);
    ASSERT_NE(at, std::string::npos) << other.out;
    EXPECT_NE(other.out.substr(at, other.out.find('\n', at) - at).find("FAIL"), std::string::npos) << line;
  }
  const size_t act = other.out.find("\nlayers.1.resid_pre ");
  ASSERT_NE(act, std::string::npos);
  EXPECT_NE(other.out.substr(act, other.out.find('\n', act + 1) - act).find("PASS"), std::string::npos);
}

// The gradient of the intervened model: nothing flows upstream of a zero-ablated site.
TEST(GradCli, AZeroAblationStopsTheGradientThroughItsSite) {
  TempDir tmp;
  trace_grad(tmp.file("z.h5"), kMetric, "--intervene 'layers.1.attn_out=zero'");
  const h5::File f = h5::File::open_read(tmp.file("z.h5"));
  auto max_abs = [&](const std::string& path) {
    double m = 0;
    for (double v : f.root().read_dataset(path).values) m = std::max(m, std::fabs(v));
    return m;
  };
  EXPECT_GT(max_abs("step_0000/grad/layers/1/attn_out"), 0.0);
  EXPECT_EQ(max_abs("step_0000/grad/layers/1/attn/z"), 0.0);
  EXPECT_EQ(max_abs("step_0000/grad/layers/1/attn/q_rope"), 0.0);
  EXPECT_GT(max_abs("step_0000/grad/layers/1/ffn/act"), 0.0);
}

// Edits of the hooks the table made editable reach the backward too. Two edits that the
// forward's algebra makes one edit (act = silu(gate) * up, so doubling up doubles act; logits =
// final_norm @ W^T, so doubling one doubles the other) give the same gradient upstream, bit for
// bit (a factor of 2 is exact in float32), and not the unedited one.
TEST(GradCli, EditsTheAlgebraEquatesGiveOneGradient) {
  TempDir tmp;
  auto grad_embed = [&](const std::string& edit) {
    const std::string out = tmp.file("g.h5");
    trace_grad(out, kMetric, edit.empty() ? "" : "--intervene '" + edit + "'");
    return h5::File::open_read(out).root().read_dataset("step_0000/grad/embed").values;
  };
  const std::vector<double> clean = grad_embed("");
  const std::vector<double> up = grad_embed("layers.1.ffn.up=scale(2)");
  EXPECT_EQ(up, grad_embed("layers.1.ffn.act=scale(2)"));
  EXPECT_NE(up, clean);
  const std::vector<double> head = grad_embed("final_norm=scale(2)");
  EXPECT_EQ(head, grad_embed("logits=scale(2)"));
  EXPECT_NE(head, clean);
}

TEST(GradCli, BadInputIsOneLine) {
  TempDir tmp;
  const std::string base = "-q --model " + kTiny + " --prompt-ids " + kIds + " --out " + tmp.file("x.h5") + " ";
  expect_usage_error(tool("lmscope-trace", base + "--grad 'logprob:pos=-1:5' --max-new-tokens 4"), "lmscope-trace",
                     {"gradients are of the prefill only"});
  expect_usage_error(tool("lmscope-trace", "-q --model " + kTiny + " --prompt-ids 5 --grad 'logprob:pos=-1:5'"),
                     "lmscope-trace", {"give --out"});
  expect_usage_error(tool("lmscope-trace", base + "--grad 'entropy:pos=-1:5'"), "lmscope-trace",
                     {"unknown metric 'entropy'"});
  expect_error_line(tool("lmscope-trace", base + "--grad 'logprob:pos=11:5'"), "lmscope-trace",
                    {"position 11 is outside the prompt (row 0 has 11 tokens)"});
  expect_error_line(tool("lmscope-trace", base + "--grad 'logit_diff:pos=-1:5,4096'"), "lmscope-trace",
                    {"token id 4096 is outside the vocabulary (1024)"});
  expect_error_line(tool("lmscope-trace", base + "--grad 'loss:3:40'"), "lmscope-trace",
                    {"the range [3, 40) is outside the prompt"});
  expect_error_line(tool("lmscope-trace", base + "--grad 'logprob:pos=-1:5' --intervene 'layers.0.attn.probs=zero'"),
                    "lmscope-trace", {"gradients through an edit of layers.0.attn.probs: not yet"});
  expect_error_line(tool("lmscope-trace", base + "--grad 'logprob:pos=-1:5' --intervene 'layers.0.attn.scores=zero'"),
                    "lmscope-trace", {"gradients through an edit of layers.0.attn.scores: not yet"});
  EXPECT_FALSE(std::filesystem::exists(tmp.file("x.h5")));   // no half-written trace
}
