// The divergence picture: heatmaps written as SVG by hand (no dependency). One panel per batch
// row; one line per mode; one cell per column (embed, each layer, logits); the colour is
// log10 of a relative error (max_abs / scale), from white (<= 1e-8: rounding) to dark red
// (>= 1: unrelated values). With `values_later`, a cell's upper half is `values` (the
// prefill) and its lower half `values_later` (the decode steps), so an exact prefill is not
// hidden by a later step's error. Cells beyond tolerance get a black border. At most 1280 px
// wide: the cells narrow for deep models and the notes are cut to what fits.
#pragma once
#include <string>
#include <vector>

#include "report/svg.h"   // xml_escape

namespace lmscope {

struct HeatmapPanel {
  std::string title;                          // "row 1: 'Hello' (3 pads)"
  std::vector<std::string> row_labels;        // modes
  std::vector<std::vector<double>> values;    // [row][col] relative error; NaN = not compared
  std::vector<std::vector<double>> values_later;   // empty, or [row][col] of the later steps (lower halves)
  std::vector<std::vector<char>> fail;        // [row][col] beyond tolerance
  std::vector<std::string> notes;             // [row] shown right of the row (may be empty)
};

// col_labels: shared by every panel. caption: lines under the legend, each wrapped to the width.
std::string heatmap_svg(const std::string& title, const std::vector<std::string>& col_labels,
                        const std::vector<HeatmapPanel>& panels, const std::vector<std::string>& caption);

// Colour for a relative error: "#rrggbb".
std::string error_colour(double rel);

}  // namespace lmscope
