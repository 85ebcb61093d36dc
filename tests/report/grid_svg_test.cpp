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
