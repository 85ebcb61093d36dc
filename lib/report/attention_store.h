// How the report page stores one step and layer of attention probabilities (docs/report.md,
// "Size"): each probability p as a 16-bit level q = round(p * 65535), so the page's number
// q / 65535 is within 1 / 131070 (0.0000077) of the trace's; little-endian, base64. A causal
// step keeps only what a query may see: query t of T reads keys 0 .. S - T + t, the rest is
// 0 (checked: a head that puts weight above that triangle is stored whole). The page's script
// (lib/report/report_template.html, probAt) reads it back with the same layout.
#pragma once
#include <cstdint>
#include <string>

#include "trace/trace_reader.h"

namespace lmscope {

constexpr double kProbLevels = 65535;

struct StoredAttention {
  bool triangle = false;   // only the causal triangle of each [T,S] block
  int64_t B = 0, H = 0, T = 0, S = 0;
  std::string base64;      // B*H blocks of N levels (N = T*S, or T*(S-T+1) + T*(T-1)/2 for a triangle)
};

// probs: a [B,H,T,S] layers.L.attn.probs. Throws one line naming `where` for a NaN or a
// value outside [0, 1] (beyond float rounding).
// `edited`: the trace records an intervention on attn.probs (scale(-1) is a legal edit), so a
// value outside [0, 1] is the edit's, drawn at the nearer end; otherwise it is damage, refused.
StoredAttention store_attention(const HookData& probs, const std::string& where, bool edited = false);

// The bytes of a stored block: 4 * ceil(2 * B*H*N / 3) (base64 of N 16-bit levels per head).
int64_t stored_attention_bytes(int64_t B, int64_t H, int64_t T, int64_t S, bool triangle);

}  // namespace lmscope
