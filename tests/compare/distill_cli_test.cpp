// lmscope-diff --kl-temperature: the distillation term KL(softmax(t/T) || softmax(s/T)) x T^2
// against torch's kl_div(..., reduction="batchmean") * T**2 on the same committed logits
// (golden/make_distill_refs.py: teacher tiny-qwen2-a, student tiny-llama-a, same 11 tokens).
// Both sides compute in float64 from the same float32 logits; they differ only in summation
// order over 1024 terms, so 1e-9 relative is ample and still catches any formula slip (a
// missing T^2 is a factor of 4 at T=2, a swapped KL direction ~10%).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

using namespace lmscope::testing_util;

namespace {

const std::string kRoot = LMSCOPE_SOURCE_DIR;
const std::string kDiff = std::string(LMSCOPE_BINARY_DIR) + "/lmscope-diff";
const std::string kTeacher = kRoot + "/golden/traces/tiny-qwen2-a.h5";
const std::string kStudent = kRoot + "/golden/traces/tiny-llama-a.h5";

CliRun distill(const std::string& student, const std::string& teacher, const std::string& args) {
  return run_cli(kDiff + " " + student + " " + teacher + " " + args);
}

void expect_one_line_error(const CliRun& r, const std::string& part) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("lmscope-diff: error: " + part), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

TEST(DistillCli, KlTimesTSquaredMatchesTorch) {
  std::ifstream f(kRoot + "/golden/distill/kl_refs.json");
  const nlohmann::json ref = nlohmann::json::parse(f);
  std::string temps;
  for (const auto& t : ref["temperatures"]) temps.append(temps.empty() ? "" : ",").append(std::to_string(t["T"].get<double>()));
  CliRun r = distill(kStudent, kTeacher, "--json --kl-temperature " + temps);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["temperatures"].size(), ref["temperatures"].size());
  for (size_t i = 0; i < j["temperatures"].size(); ++i) {
    const auto& got = j["temperatures"][i];
    const auto& want = ref["temperatures"][i];
    const double T = want["T"].get<double>();
    EXPECT_EQ(got["T"].get<double>(), T);
    EXPECT_NEAR(got["mean_kl_t2"].get<double>(), want["kl_t2"].get<double>(), 1e-9 * want["kl_t2"].get<double>()) << T;
    EXPECT_NEAR(got["mean_teacher_entropy"].get<double>(), want["teacher_entropy"].get<double>(),
                1e-9 * want["teacher_entropy"].get<double>()) << T;
    EXPECT_NEAR(got["mean_kl_t2"].get<double>(), got["mean_kl"].get<double>() * T * T, 1e-12 * got["mean_kl_t2"].get<double>());
    ASSERT_EQ(got["positions"].size(), 11u);
    const auto& top = got["positions"][0]["teacher_top"];
    ASSERT_EQ(top.size(), 3u);
    EXPECT_GE(top[0]["p"].get<double>(), top[1]["p"].get<double>());
  }
}

TEST(DistillCli, SameTraceHasZeroKl) {
  CliRun r = distill(kTeacher, kTeacher, "--json --kl-temperature 1,4");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& t : j["temperatures"]) EXPECT_EQ(t["mean_kl"].get<double>(), 0.0);
}

TEST(DistillCli, BadInputIsOneLine) {
  expect_one_line_error(distill(kStudent, kTeacher, "--kl-temperature 0"), "--kl-temperature: 0 is not a positive number");
  expect_one_line_error(distill(kStudent, kTeacher, "--kl-temperature 1,-2"), "--kl-temperature: -2 is not a positive number");
  expect_one_line_error(distill(kStudent, kRoot + "/golden/traces/tiny-qwen2-b.h5", "--kl-temperature 1"),
                        "different token ids");
  const std::string small = (std::filesystem::temp_directory_path() / "lmscope_distill_v16.h5").string();
  write_synthetic_trace(small);   // vocabulary 16
  expect_one_line_error(distill(small, kTeacher, "--kl-temperature 1"),
                        "different vocabularies: the student's logits have V=16, the teacher's V=1024");
  std::filesystem::remove(small);
}
