// lmscope-report's token saliency row (docs/report.md, "Token saliency"): a trace of
// `lmscope-trace --grad` shows each prompt token's gradient x input summed over D. Held to the
// trace's own embed and grad.embed (a float64 sum written here), to padding (exactly 0), to a
// finite difference of the metric (the row's meaning: d metric / d scale of the token's
// embedding), and drawn in headless Chromium with those numbers. Made on golden/models/tiny-qwen2.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "report/report_data.h"
#include "tests/report/browser.h"
#include "tests/report/page_checks.h"
#include "tests/test_util.h"
#include "trace/trace_reader.h"

using namespace lmscope;
using namespace lmscope::testing_util;

namespace {

const std::string kSrc = LMSCOPE_SOURCE_DIR;
const std::string kBin = LMSCOPE_BINARY_DIR;
const std::string kTiny = kSrc + "/golden/models/tiny-qwen2";
const std::string kMetric = "logprob:pos=-1:264";

// A trace of two prompts (11 and 5 tokens: row 1 is left-padded by 6) with the metric's
// gradient at the embedding; `extra` adds flags (an --intervene).
std::string trace_command(const std::string& out, const std::string& extra = "") {
  return kBin + "/lmscope-trace --model " + kTiny +
         " --prompt 'The golden fish spoke to the old man.' --prompt 'Hello world!' --max-new-tokens 1 -q"
         " --hooks 'tokens.*,embed' --grad '" + kMetric + "' --out " + out + extra;
}

class ReportSaliency : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    made_ = run_cli(trace_command(dir_->file("grad.h5"))).code == 0;
    chromium_ = find_chromium(&no_chromium_);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
  static bool made_;
  static std::string chromium_, no_chromium_;
};
TempDir* ReportSaliency::dir_ = nullptr;
bool ReportSaliency::made_ = false;
std::string ReportSaliency::chromium_, ReportSaliency::no_chromium_;

// sum over D of embed * grad.embed at (b, t), from the trace's datasets [B, T, D].
double grad_times_input(const HookData& x, const HookData& g, int64_t b, int64_t t) {
  const int64_t T = x.shape[1], D = x.shape[2];
  double s = 0;
  for (int64_t d = 0; d < D; ++d) s += x.values[size_t((b * T + t) * D + d)] * g.values[size_t((b * T + t) * D + d)];
  return s;
}

}  // namespace

TEST_F(ReportSaliency, EachPromptTokenIsItsGradientTimesInputAndPaddingIsZero) {
  ASSERT_TRUE(made_);
  TraceReader tr(dir_->file("grad.h5"));
  const nlohmann::json sal = report_data(tr, ReportOptions{}, nullptr)["saliency"];
  ASSERT_FALSE(sal.contains("absent")) << sal.dump();
  EXPECT_EQ(sal["metric"], kMetric);
  EXPECT_EQ(sal["input"], "embed");
  const HookData x = tr.read(0, "embed"), g = tr.read(0, "grad.embed"), mask = tr.read(0, "tokens.attention_mask");
  const int64_t B = x.shape[0], T = x.shape[1];
  ASSERT_EQ(sal["rows"].size(), size_t(B));
  for (int64_t b = 0; b < B; ++b) {
    ASSERT_EQ(sal["rows"][size_t(b)].size(), size_t(T));
    int nonzero = 0;
    for (int64_t t = 0; t < T; ++t) {
      const double shown = sal["rows"][size_t(b)][size_t(t)].get<double>();
      if (mask.values[size_t(b * T + t)] == 0) {
        EXPECT_EQ(shown, 0.0) << "padding, row " << b << " column " << t;
        EXPECT_FALSE(std::signbit(shown)) << "a -0 would print as -0";
        continue;
      }
      const double want = grad_times_input(x, g, b, t);
      EXPECT_NEAR(shown, want, digit_tolerance(want)) << "row " << b << " column " << t;   // 5 significant digits
      nonzero += want != 0;
    }
    EXPECT_GE(nonzero, 4) << "row " << b << ": a row of zeros would pass any formula";
  }
}

// What the row means: scaling the embedding of token t by (1 + e) changes the metric by about
// e * saliency[t] (first order). Central difference with e = 0.01 (two runs with
// --intervene 'embed[row=0,pos=5]=scale(1 +- e)', whose grad_metric_value is that run's
// metric): its error is O(e^2) of the curvature, so 2% of the row's largest |saliency| (plus the
// float32 metric's rounding over 2e) is room for it. Position 5 of row 0 is among
// the row's largest values (measured -0.2018 against a slope of -0.2018), so a wrong sign or a
// neighbouring token's value (0.0056 at position 4) fails.
TEST_F(ReportSaliency, ARowValueIsTheMetricsSlopeInThatTokensEmbeddingScale) {
  ASSERT_TRUE(made_);
  TraceReader tr(dir_->file("grad.h5"));
  const nlohmann::json row0 = report_data(tr, ReportOptions{}, nullptr)["saliency"]["rows"][0];
  double top = 0;
  for (const auto& v : row0) top = std::max(top, std::fabs(v.get<double>()));
  const double e = 0.01;
  double metric[2];
  for (int i = 0; i < 2; ++i) {
    const std::string out = dir_->file("scaled" + std::to_string(i) + ".h5");
    const std::string c = i == 0 ? "1.01" : "0.99";
    CliRun r = run_cli(trace_command(out, " --intervene 'embed[row=0,pos=5]=scale(" + c + ")'"));
    ASSERT_EQ(r.code, 0) << r.err;
    metric[i] = TraceReader(out).root_attr_double("grad_metric_value");   // the batch's sum: row 1 unchanged
  }
  const double slope = (metric[0] - metric[1]) / (2 * e);
  const double tol = 0.02 * top + 1e-5 / e;
  ASSERT_GT(std::fabs(row0[5].get<double>()), 10 * tol) << "position 5 must be large enough for the check to mean something";
  EXPECT_NEAR(slope, row0[5].get<double>(), tol) << "top " << top;
}

TEST_F(ReportSaliency, APageDrawsTheRowAndATraceWithoutGradientsSaysHowToGetIt) {
  ASSERT_TRUE(made_);
  if (chromium_.empty()) FAIL() << no_chromium_;   // setup.sh installs it: missing = broken setup
  const std::string html = dir_->file("grad.html");
  CliRun r = run_cli(kBin + "/lmscope-report " + dir_->file("grad.h5") + " -o " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string dom = rendered_dom(chromium_, dir_->file("profile"), "file://" + html);
  TraceReader tr(dir_->file("grad.h5"));
  const HookData x = tr.read(0, "embed"), g = tr.read(0, "grad.embed");
  const int64_t T = x.shape[1];
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t : {int64_t(0), T - 1}) {
      const std::string id = "saliency-c-" + std::to_string(b) + "-" + std::to_string(t);
      const std::string v = dom_attr(dom, id, "data-value");
      ASSERT_FALSE(v.empty()) << id;
      const double want = grad_times_input(x, g, b, t);
      EXPECT_NEAR(std::stod(v), want, digit_tolerance(want)) << id;
    }
  EXPECT_EQ(dom_attr(dom, "saliency-c-1-0", "data-value"), "0") << "row 1's first column is padding";
  EXPECT_NE(dom.find("logprob:pos=-1:264"), std::string::npos) << "the page names the metric";
  // A trace without --grad: the section says what to trace.
  const std::string plain = dir_->file("plain.h5"), plain_html = dir_->file("plain.html");
  ASSERT_EQ(run_cli(kBin + "/lmscope-trace --model " + kTiny + " --prompt 'Hello world!' --max-new-tokens 1 -q"
                    " --hooks 'tokens.*,embed' --out " + plain).code, 0);
  ASSERT_EQ(run_cli(kBin + "/lmscope-report " + plain + " -o " + plain_html).code, 0);
  const std::string dom2 = rendered_dom(chromium_, dir_->file("profile"), "file://" + plain_html);
  EXPECT_NE(dom2.find("This trace has no gradients of the embedding (grad.embed). Trace with --grad METRIC"),
            std::string::npos);
}

// A damaged gradient (a NaN written into grad.embed of a copy of the trace, with the HDF5 C API):
// one line naming the file and where, exit 1, and no page left behind.
TEST_F(ReportSaliency, ANonFiniteGradientIsOneLineAndNoPage) {
  ASSERT_TRUE(made_);
  const std::string bad = dir_->file("nan.h5"), html = dir_->file("nan.html");
  std::filesystem::copy_file(dir_->file("grad.h5"), bad);
  {
    const hid_t f = H5Fopen(bad.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t d = H5Dopen2(f, "/step_0000/grad/embed", H5P_DEFAULT);
    ASSERT_GE(d, 0);
    const hid_t space = H5Dget_space(d);
    std::vector<float> v(size_t(H5Sget_simple_extent_npoints(space)));
    ASSERT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
    v[2] = std::nanf("");   // row 0, position 0, d = 2
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
  }
  CliRun r = run_cli(kBin + "/lmscope-report " + bad + " -o " + html);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "lmscope-report: error: '" + bad + "': grad.embed x embed is not finite at row 0, position 0\n");
  EXPECT_FALSE(std::filesystem::exists(html));
}
