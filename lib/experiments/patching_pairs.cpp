#include "experiments/patching_pairs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/json_error.h"
#include "io/regular_file.h"

namespace lmscope {

namespace {

// One prompt of a pair: its text field ("clean") encoded, or its ids field ("clean_ids"), one
// of the two. `where` is "FILE:LINE".
std::vector<int32_t> pair_prompt(const nlohmann::json& obj, const std::string& name, const EncodeFn& encode,
                                 int64_t vocab_size, const std::string& where) {
  const std::string ids_name = name + "_ids";
  const bool has_text = obj.contains(name), has_ids = obj.contains(ids_name);
  if (has_text == has_ids)
    throw std::runtime_error(where + ": give one of \"" + name + "\" (text) and \"" + ids_name + "\" (token ids)" +
                             (has_text ? ", not both" : ""));
  std::vector<int32_t> ids;
  if (has_text) {
    const nlohmann::json& v = obj[name];
    if (!v.is_string()) throw std::runtime_error(where + ": \"" + name + "\" is a " + json_kind(v) + ", not a string");
    if (!encode) throw std::runtime_error(where + ": no tokenizer to encode \"" + name + "\"; give \"" + ids_name + "\"");
    ids = encode(v.get<std::string>());
  } else {
    const nlohmann::json& v = obj[ids_name];
    if (!v.is_array()) throw std::runtime_error(where + ": \"" + ids_name + "\" is a " + json_kind(v) + ", not an array of token ids");
    for (const nlohmann::json& id : v) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0)
        throw std::runtime_error(where + ": \"" + ids_name + "\" holds " + json_short(id) + ", not a token id");
      if (id.get<int64_t>() >= vocab_size)
        throw std::runtime_error(where + ": token id " + std::to_string(id.get<int64_t>()) + " in \"" + ids_name +
                                 "\" is outside the vocabulary (" + std::to_string(vocab_size) + ")");
      ids.push_back(int32_t(id.get<int64_t>()));
    }
  }
  if (ids.empty()) throw std::runtime_error(where + ": \"" + (has_text ? name : ids_name) + "\" has no tokens");
  return ids;
}

}  // namespace

std::vector<PatchPair> read_patch_pairs(const std::string& path, const EncodeFn& encode, const tok::Tokenizer* tokenizer,
                                        const std::string& default_metric, int64_t vocab_size) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the pairs file '" + path + "'");
  std::vector<PatchPair> pairs;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;   // a blank line is no pair
    const std::string where = path + ":" + std::to_string(number);
    nlohmann::json obj;
    try {
      obj = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": not JSON (" + json_error_text(e) + ")");
    }
    if (!obj.is_object()) throw std::runtime_error(where + ": a " + json_kind(obj) + ", not a JSON object");
    PatchPair p;
    p.line = number;
    p.clean = pair_prompt(obj, "clean", encode, vocab_size, where);
    p.corrupt = pair_prompt(obj, "corrupt", encode, vocab_size, where);
    std::string metric = default_metric;
    if (obj.contains("metric")) {
      if (!obj["metric"].is_string()) throw std::runtime_error(where + ": \"metric\" is a " + json_kind(obj["metric"]) + ", not a string");
      metric = obj["metric"].get<std::string>();
    }
    if (metric.empty()) throw std::runtime_error(where + ": no \"metric\" in this pair and no --metric for every pair");
    try {
      p.metric = parse_patch_metric(metric, tokenizer, vocab_size);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": " + e.what());
    }
    if (p.clean.size() != p.corrupt.size())
      throw std::runtime_error(where + ": clean prompt has " + std::to_string(p.clean.size()) + " tokens, corrupted " +
                               std::to_string(p.corrupt.size()) + ": patching needs prompts of one length");
    // A cell is one layer at one position of every pair: the pairs must line up, so a pair of
    // another length is refused, not padded (a pad column would be a cell of no token).
    if (!pairs.empty() && p.clean.size() != pairs[0].clean.size())
      throw std::runtime_error(where + ": this pair has " + std::to_string(p.clean.size()) + " tokens, the first (line " +
                               std::to_string(pairs[0].line) + ") " + std::to_string(pairs[0].clean.size()) +
                               ": averaging per position needs pairs of one length");
    pairs.push_back(std::move(p));
  }
  if (in.bad()) throw std::runtime_error("cannot read the pairs file '" + path + "'");
  if (pairs.empty()) throw std::runtime_error(path + ": no pairs (the file is empty or blank)");
  return pairs;
}

std::vector<PatchPairsGrid> pair_statistics(const std::vector<PatchSweep>& pairs) {
  std::vector<PatchPairsGrid> out;
  if (pairs.empty()) return out;
  const double n = double(pairs.size());
  for (size_t g = 0; g < pairs[0].grids.size(); ++g) {
    const PatchGrid& first = pairs[0].grids[g];
    PatchPairsGrid s;
    s.site = first.site;
    s.columns = first.columns;
    s.column_index = first.column_index;
    s.mean = s.sd = s.min = s.max = first.normalized;
    for (size_t l = 0; l < first.normalized.size(); ++l)
      for (size_t c = 0; c < first.normalized[l].size(); ++c) {
        // Summed in file order, in double: the mean of single-pair runs done by hand in the
        // same order is the same number.
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        for (const PatchSweep& p : pairs) {
          const double v = p.grids[g].normalized[l][c];
          sum += v;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        const double mean = sum / n;
        double sq = 0;
        for (const PatchSweep& p : pairs) sq += (p.grids[g].normalized[l][c] - mean) * (p.grids[g].normalized[l][c] - mean);
        s.mean[l][c] = mean;
        s.sd[l][c] = std::sqrt(sq / n);
        s.min[l][c] = lo;
        s.max[l][c] = hi;
      }
    out.push_back(std::move(s));
  }
  return out;
}

PatchPairsSweep run_patch_pairs(const ModelContext& m, const std::vector<PatchPair>& pairs, const std::string& path,
                                PatchSweepOptions base, const PairsProgressFn& progress) {
  PatchPairsSweep out;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pairs.size(); ++i) {
    PatchSweepOptions opt = base;
    opt.clean = pairs[i].clean;
    opt.corrupt = pairs[i].corrupt;
    opt.metric = pairs[i].metric;
    if (progress) opt.on_forward = [&, i](int64_t done, int64_t total) { progress(i, done, total); };
    PatchSweep s = run_patch_sweep(m, opt);
    std::remove(opt.clean_trace.c_str());
    if (s.clean_metric == s.corrupt_metric)
      throw std::runtime_error(path + ":" + std::to_string(pairs[i].line) + ": the clean and corrupted runs give the same metric (" +
                               std::to_string(s.clean_metric) + "): nothing to normalize by");
    out.forwards += s.forwards;
    out.cells += s.cells;
    out.pairs.push_back(std::move(s));
  }
  out.grids = pair_statistics(out.pairs);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace lmscope
