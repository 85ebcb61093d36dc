// lmscope-quant's figure: relative error of layers.L.resid_post against the float32 reference,
// per layer, one line per scheme, log10 y axis (errors span decades: 8-bit weights ~1e-2, 4-bit
// ~1e-1), whole decades around the data (not below 1e-8). An error of exactly 0 (the
// gguf-blocks identity) is drawn on the bottom of the axis.
// Hand-written SVG, as lib/experiments/divergence_svg.h.
#pragma once
#include <string>

#include "quant/quant_run.h"

namespace lmscope::quant {

std::string error_by_layer_svg(const QuantReport& r, const std::string& title);

}  // namespace lmscope::quant
