// A labelled grid picture as standalone SVG (lmscope-report --svg): a title, token labels on
// both axes, axis titles, one cell per value coloured from white (0) to dark blue (1), or from
// dark red (-1) through white (0) to dark blue (1) for signed values, and a legend. Sized for a
// slide: cells shrink (to 8 px, not below) so that the picture stays within 1280 x 720; a grid
// with more rows or columns than fit at 8 px (about 48 rows, 115 columns) is drawn as blocks of
// n x n of its cells, each block one cell, and the caption says so (kMaxBlockRows/Cols).
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
  // How a block of cells becomes one (a grid too large for 1280 x 720): Mean averages them;
  // RowsAverageColumnsAdd is for rows that are distributions over the columns (attention: a
  // block is the probability its query tokens put on its key tokens, on average, so a block row
  // still sums to 1).
  enum class Blocks { Mean, RowsAverageColumnsAdd } blocks = Blocks::Mean;
  std::string block_what = "tokens";          // what n x n counts in the caption ("tokens", "positions")
};

// The most rows and columns drawn one cell each (8 px); a larger grid is drawn in blocks.
constexpr int kMaxBlockRows = 48, kMaxBlockCols = 115;

// The grid in blocks of n x n cells, n the smallest that fits kMaxBlockRows x kMaxBlockCols
// (the picture itself when n = 1); labels name each block's first cell and its range.
GridPicture grid_in_blocks(const GridPicture& g, int* n_out = nullptr);

std::string grid_svg(const GridPicture& g);

}  // namespace lmscope
