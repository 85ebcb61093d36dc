// A labelled grid picture as standalone SVG (lmscope-report --svg): a title, token labels on
// both axes, axis titles, one cell per value coloured from white (0) to dark blue (1), or from
// dark red (-1) through white (0) to dark blue (1) for signed values, and a legend. Sized for a
// slide: cells shrink (to 8 px, not below) so that the picture stays within about 1280 x 720 up
// to about 80 rows and columns; more grow it.
#pragma once
#include <string>
#include <vector>

namespace lmscope {

struct GridPicture {
  std::string title;                          // "Attention, layer 3 head 2 (step 0)"
  std::string x_label, y_label;               // axis titles, e.g. "key token (column)"
  std::vector<std::string> col_labels, row_labels;
  std::vector<std::vector<double>> values;    // [row][col] in 0..1 (signed: -1..1)
  bool is_signed = false;                     // -1..1 on a diverging scale (red, white at 0, blue), not 0..1
  std::string legend;                         // what the colour means, e.g. "probability"
  std::vector<std::pair<double, std::string>> legend_stops;   // value -> label under the scale
  bool print_values = false;                  // write values >= 0.005 in their cells (2 decimals) when they fit
  std::string caption;                        // under the picture, wrapped to its width
};

std::string grid_svg(const GridPicture& g);

}  // namespace lmscope
