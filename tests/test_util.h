// Shared by the trace and compare tests: a temporary directory and a small synthetic trace
// shaped like a real one (left padding, prefill + one decode step, masked sentinels).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "trace/trace_writer.h"

namespace lmscope::testing_util {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lmscope-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Writer temporaries (`<out>.partial.<pid>.<random>`) in `dir`: none may remain after a run,
// whether it succeeded or failed.
inline std::vector<std::string> temporaries_in(const std::filesystem::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".partial.") != std::string::npos) found.push_back(e.path().string());
  return found;
}

// The temporaries of the trace `out` only (beside it).
inline std::vector<std::string> trace_temporaries(const std::string& out) {
  const std::filesystem::path p(out);
  std::vector<std::string> found;
  for (const std::string& t : temporaries_in(p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path()))
    if (std::filesystem::path(t).filename().string().rfind(p.filename().string() + ".partial.", 0) == 0)
      found.push_back(t);
  return found;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A command run through the shell with stdout and stderr captured (CLI tests).
struct CliRun {
  int code = -1;   // exit status; -1 when killed by a signal (a crash)
  std::string out, err;
};

inline CliRun run_cli(const std::string& command) {
  TempDir tmp;
  const std::string cmd = command + " > " + tmp.file("out") + " 2> " + tmp.file("err");
  const int status = std::system(cmd.c_str());
  CliRun r;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.out = read_text(tmp.file("out"));
  r.err = read_text(tmp.file("err"));
  return r;
}

// Lets a test change a hook's values before they are written: (step, hook, values).
using Perturb = std::function<void(int, const std::string&, std::vector<float>&)>;

constexpr float kLowest = -3.4028235e38f;

// B=2 (row 1 left-padded by one), prompt T=4, one decode step; D=8, H=2, Hkv=1, hd=4, V=16.
inline void write_synthetic_trace(const std::string& path, const Perturb& perturb = nullptr,
                                  float masked = kLowest, std::vector<int32_t> generated = {5, 6, 7, 8},
                                  bool with_logits_in_step1 = true) {
  const int B = 2, D = 8, H = 2, Hkv = 1, hd = 4, V = 16, P = 4;
  TraceWriter w(path);
  w.set_root_attr("producer", std::string("lmscope-test"));
  w.set_root_attr("padding_side", std::string("left"));
  w.set_root_attr("use_cache", int64_t(1));
  w.set_root_attr("pad_token_id", int64_t(0));
  w.set_root_attr("gqa_map", std::vector<int32_t>{0, 0});
  w.set_root_attr("missing_hooks", std::string("[]"));
  for (int step = 0; step < 2; ++step) {
    const int T = step == 0 ? P : 1, S = P + step, past = step == 0 ? 0 : P;
    w.begin_step({step, step == 0 ? "prefill" : "decode", true, past, T, S});
    auto fvals = [&](const std::string& hook, int64_t n, double amp) {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(amp * std::sin(0.37 * double(i) + hook.size() + step));
      if (perturb) perturb(step, hook, v);
      return v;
    };
    // attention mask over S: row 1's first position is padding
    std::vector<int32_t> am(size_t(B * S), 1);
    am[size_t(1 * S + 0)] = 0;
    std::vector<int32_t> ids(size_t(B * T));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(10 + i + step);
    if (step == 0) ids[size_t(1 * T + 0)] = 0;   // the pad token
    w.write("tokens.input_ids", "B,T", {B, T}, ids.data());
    w.write("tokens.attention_mask", "B,S", {B, S}, am.data());
    auto embed = fvals("embed", B * T * D, 1.0);
    w.write("embed", "B,T,D", {B, T, D}, embed.data());
    // additive mask: causal + padding, masked entries hold the sentinel
    std::vector<float> comb(size_t(B * T * S), 0.f);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int s = 0; s < S; ++s) {
          bool causal = s <= past + t, real = am[size_t(b * S + s)] == 1;
          if (!causal || !real) comb[size_t((b * T + t) * S + s)] = masked;
        }
    w.write("mask.combined", "B,T,S", {B, T, S}, comb.data());
    auto scores = fvals("layers.0.attn.scores", B * H * T * S, 3.0);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int t = 0; t < T; ++t)
          for (int s = 0; s < S; ++s)
            if (comb[size_t((b * T + t) * S + s)] != 0) scores[size_t(((b * H + h) * T + t) * S + s)] = masked;
    if (perturb) perturb(step, "layers.0.attn.scores#masked", scores);
    w.write("layers.0.attn.scores", "B,H,T,S", {B, H, T, S}, scores.data());
    auto probs = fvals("layers.0.attn.probs", B * H * T * S, 0.5);
    w.write("layers.0.attn.probs", "B,H,T,S", {B, H, T, S}, probs.data());
    auto resid = fvals("layers.0.resid_post", B * T * D, 2.0);
    w.write("layers.0.resid_post", "B,T,D", {B, T, D}, resid.data());
    auto kvk = fvals("kv.0.k", B * Hkv * S * hd, 1.5);
    w.write("kv.0.k", "B,Hkv,S,hd", {B, Hkv, S, hd}, kvk.data());
    if (step == 0 || with_logits_in_step1) {
      auto logits = fvals("logits", B * T * V, 10.0);
      w.write("logits", "B,T,V", {B, T, V}, logits.data());
    }
    std::vector<int32_t> chosen = {generated[size_t(step)], generated[size_t(2 + step)]};
    w.write("sample.chosen", "B", {B}, chosen.data());
    w.set_step_group_attr("sample", "do_sample", int64_t(0));
    w.set_step_group_attr("sample", "temperature", 1.0);
  }
  w.write_root_dataset("generated_ids", {2, 2}, generated.data());
  w.commit();
}

}  // namespace lmscope::testing_util
