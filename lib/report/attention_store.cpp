#include "report/attention_store.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "io/base64.h"

namespace lmscope {

namespace {

// Keys a query row keeps: all S, or in a triangle S - T + 1 + t (the last query sees every key).
int64_t row_keys(int64_t T, int64_t S, int64_t t, bool triangle) { return triangle ? S - T + 1 + t : S; }

int64_t levels_per_head(int64_t T, int64_t S, bool triangle) {
  return triangle ? T * (S - T + 1) + T * (T - 1) / 2 : T * S;
}

}  // namespace

int64_t stored_attention_bytes(int64_t B, int64_t H, int64_t T, int64_t S, bool triangle) {
  const int64_t bytes = 2 * B * H * levels_per_head(T, S, triangle);
  return 4 * ((bytes + 2) / 3);
}

StoredAttention store_attention(const HookData& probs, const std::string& where, bool edited) {
  if (probs.shape.size() != 4) throw std::runtime_error(where + ": attention probabilities are not [B,H,T,S]");
  StoredAttention out;
  out.B = probs.shape[0], out.H = probs.shape[1], out.T = probs.shape[2], out.S = probs.shape[3];
  const int64_t T = out.T, S = out.S, blocks = out.B * out.H;
  std::vector<uint16_t> q(probs.values.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const double p = probs.values[i];
    // float32 softmax outputs may exceed 1 by a rounding step; anything further is damage.
    if (!(p >= -1e-6 && p <= 1 + 1e-6) && !(edited && std::isfinite(p)))
      throw std::runtime_error(where + ": attention probability " + std::to_string(p) + " is not in [0, 1]");
    q[i] = uint16_t(std::lround(std::clamp(p, 0.0, 1.0) * kProbLevels));
  }
  out.triangle = S >= T;
  for (int64_t blk = 0; blk < blocks && out.triangle; ++blk)
    for (int64_t t = 0; t < T && out.triangle; ++t)
      for (int64_t s = row_keys(T, S, t, true); s < S; ++s)
        if (q[size_t((blk * T + t) * S + s)] != 0) {
          out.triangle = false;
          break;
        }
  std::vector<unsigned char> bytes;
  bytes.reserve(size_t(2 * blocks * levels_per_head(T, S, out.triangle)));
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < row_keys(T, S, t, out.triangle); ++s) {
        const uint16_t v = q[size_t((blk * T + t) * S + s)];
        bytes.push_back(uint8_t(v & 0xff));
        bytes.push_back(uint8_t(v >> 8));
      }
  out.base64 = base64_encode(bytes.data(), bytes.size());
  return out;
}

}  // namespace lmscope
