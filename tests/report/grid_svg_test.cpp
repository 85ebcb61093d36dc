// The grid picture's two colour scales: 0..1 from white to dark blue, and the signed scale
// (lmscope-patch --svg) from dark red at -1 through white at 0 to dark blue at 1, so that a
// negative cell is not drawn white. The ends are ColorBrewer RdBu's (#67000d, #08306b).
#include <gtest/gtest.h>

#include "report/grid_svg.h"
#include "report/svg.h"

using namespace lmscope;

TEST(GridSvg, SignedValuesAreRedBelowZeroWhiteAtZeroBlueAbove) {
  EXPECT_EQ(signed_colour(-1.0), "#67000d");
  EXPECT_EQ(signed_colour(-7.0), "#67000d");   // clamped
  EXPECT_EQ(signed_colour(0.0), "#ffffff");
  EXPECT_EQ(signed_colour(1.0), "#08306b");
  EXPECT_EQ(signed_colour(0.5), probability_colour(0.5));
  EXPECT_NE(signed_colour(-0.27), "#ffffff");  // lesson 17's L29H0: visible

  GridPicture g;
  g.title = "t";
  g.x_label = "head";
  g.y_label = "layer";
  g.col_labels = {"0", "1", "2"};
  g.row_labels = {"0"};
  g.values = {{-1.0, 0.0, 1.0}};
  g.legend = "normalized";
  g.legend_stops = {{-1.0, "-1"}, {0.0, "0"}, {1.0, "1"}};
  g.is_signed = true;
  const std::string svg = grid_svg(g);
  EXPECT_NE(svg.find("fill=\"#67000d\"><title>0 \u2192 0: -1</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("fill=\"#08306b\"><title>0 \u2192 2: 1</title>"), std::string::npos);
  g.is_signed = false;   // the 0..1 scale draws -1 as 0: white
  EXPECT_NE(grid_svg(g).find("fill=\"#ffffff\"><title>0 \u2192 0: -1</title>"), std::string::npos);
}

// A grid too large for 1280 x 720 at 8 px a cell is drawn in blocks (docs/report.md, "Pictures"):
// 400 x 400 causal attention rows, each a distribution (a uniform one over the keys it sees),
// become 45 x 45 blocks of 9 x 9 tokens; a block row still sums to 1 (its queries' probability
// summed over the keys, averaged over the queries), a block is worked out by hand, and the
// picture is within 1280 x 720 px.
TEST(GridSvg, ALargeGridIsDrawnInBlocksThatKeepRowSums) {
  const int n = 400;
  GridPicture g;
  g.title = "Attention";
  g.x_label = "key";
  g.y_label = "query";
  g.legend = "probability";
  g.caption = "Rows are queries.";
  g.blocks = GridPicture::Blocks::RowsAverageColumnsAdd;
  for (int q = 0; q < n; ++q) {
    std::string label = "t";   // appended: "t" + std::string trips GCC 12's bogus -Wrestrict
    label += std::to_string(q);
    g.row_labels.push_back(label);
    g.col_labels.push_back(label);
    std::vector<double> row(n, 0.0);
    for (int k = 0; k <= q; ++k) row[size_t(k)] = 1.0 / (q + 1);
    g.values.push_back(row);
  }
  int block = 0;
  const GridPicture b = grid_in_blocks(g, &block);
  EXPECT_EQ(block, 9);
  ASSERT_EQ(b.values.size(), 45u);
  ASSERT_EQ(b.col_labels.size(), 45u);
  EXPECT_EQ(b.row_labels[1], "t9 9\u201317");
  EXPECT_EQ(b.row_labels[44], "t396 396\u2013399");   // the last block: 4 tokens
  for (const std::vector<double>& row : b.values) {
    double sum = 0;
    for (double v : row) sum += v;
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  // Block (1, 0): queries 9..17 on keys 0..8: query q puts 9 / (q + 1) there; their mean.
  double want = 0;
  for (int q = 9; q <= 17; ++q) want += 9.0 / (q + 1);
  EXPECT_NEAR(b.values[1][0], want / 9, 1e-12);
  EXPECT_NE(b.caption.find("Each cell is a block of 9 \u00d7 9 tokens (400 \u00d7 400 do not fit"), std::string::npos) << b.caption;
  const std::string svg = grid_svg(g);
  const size_t w = svg.find(" width=\""), h = svg.find(" height=\"");
  EXPECT_LE(std::stoi(svg.substr(w + 8)), 1280);
  EXPECT_LE(std::stoi(svg.substr(h + 9)), 720);
  g.blocks = GridPicture::Blocks::Mean;   // a mask's blocks: the share of cells that are set
  // Block (0, 0): queries 0..8 see only keys 0..8, so each of its 9 rows adds up to 1 there:
  // 9 over its 81 cells.
  EXPECT_NEAR(grid_in_blocks(g).values[0][0], 9.0 / 81, 1e-12);
}
