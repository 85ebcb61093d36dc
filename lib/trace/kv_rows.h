// How kv.L.k / kv.L.v are stored in a trace file (docs/trace-format.md, "Cache rows"). The
// hook's value is the whole cache after the step ([B,Hkv,S,hd]), but storing that at every
// step makes a trace grow with the square of the tokens generated. So each step stores only
// the T rows it wrote into the cache ([B,Hkv,T,hd], dataset attributes rows = "appended" and
// first_position = S - T), and readers rebuild the cache by writing every step's rows at their
// positions, step 0 first, as the cache itself was written. A dataset without rows =
// "appended" (format_version 1 files, older HF goldens) holds the whole cache.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "trace/hooks.h"

namespace lmscope {

constexpr const char* kKvRowsAppended = "appended";   // the `rows` attribute's value

inline bool is_kv_hook(Hook h) { return h == Hook::KvK || h == Hook::KvV; }

// The last T positions of a float32 cache [B,Hkv,S,hd]: the rows this step appended.
Tensor appended_kv_rows(const Tensor& cache, int64_t T);

// Rebuilds one kv hook's cache from the appended rows of steps 0, 1, ... in order, exactly as
// the cache was written (a later write to a position replaces an earlier one). Every input is
// checked against what came before, so a hostile file ends in one line, not a huge allocation:
// a step's rows must start at or before the positions already filled.
class KvAssembly {
 public:
  // rows: [B,Hkv,T,hd] values of one step, row-major. `where` names the dataset in errors.
  void add(const Shape& shape, const std::vector<double>& rows, int64_t first_position, const std::string& where);
  // The cache of S positions [B,Hkv,S,hd]; throws when some position below S was never written.
  std::vector<double> cache(int64_t S, const std::string& where) const;
  Shape cache_shape(int64_t S) const { return {B_, Hkv_, S, hd_}; }
  int64_t filled() const { return S_; }

 private:
  int64_t B_ = -1, Hkv_ = 0, hd_ = 0;
  int64_t S_ = 0;                 // positions held (0..S_-1 all written: rows never leave a gap)
  std::vector<double> values_;    // [B,Hkv,S_,hd]
};

}  // namespace lmscope
