// The divergence picture: heatmaps written as SVG by hand (no dependency). One panel per batch
// row; one line per mode; one cell per column (embed, each layer, logits); the colour is
// log10 of the worst relative error (max_abs / scale) over the compared steps, from white
// (<= 1e-8: rounding) to dark red (>= 1: unrelated values). Cells beyond tolerance get a black
// border and their value printed.
#pragma once
#include <string>
#include <vector>

#include "report/svg.h"   // xml_escape

namespace lmscope {

struct HeatmapPanel {
  std::string title;                          // "row 1: 'Hello' (3 pads)"
  std::vector<std::string> row_labels;        // modes
  std::vector<std::vector<double>> values;    // [row][col] relative error; NaN = not compared
  std::vector<std::vector<char>> fail;        // [row][col] beyond tolerance
  std::vector<std::string> notes;             // [row] shown right of the row (may be empty)
};

// col_labels: shared by every panel.
std::string heatmap_svg(const std::string& title, const std::vector<std::string>& col_labels,
                        const std::vector<HeatmapPanel>& panels, const std::string& caption);

// Colour for a relative error: "#rrggbb".
std::string error_colour(double rel);

}  // namespace lmscope
