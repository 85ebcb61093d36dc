// The cache picture for a slide (lmscope-cache --svg): per step, the tokens pushed through
// the model with the KV cache and without it; the KV cache's bytes as the sequence grows; with
// --fault, the step (and layer) where the cached run first departs. Sized for 1280 x 720.
#pragma once
#include <string>

#include "experiments/cache.h"

namespace lmscope {

std::string cache_svg(const CacheReport& r);

}  // namespace lmscope
