#include "report/grid_svg.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/svg.h"

namespace lmscope {

std::string grid_svg(const GridPicture& g) {
  const int nr = int(g.row_labels.size()), nc = int(g.col_labels.size());
  const int left = 170, top = 150, right = 40;
  // Cells as big as 1280 x 720 allow (at least 8 px, at most 40).
  const int cell = std::clamp(std::min((1240 - left - right) / std::max(nc, 1), (640 - top - 90) / std::max(nr, 1)), 8, 40);
  const int label_font = std::clamp(cell - 2, 8, 14);
  const int width = std::max(left + nc * cell + right, 720);
  const int height = top + nr * cell + 110;
  std::ostringstream o;
  o << svg_text(16, 30, g.title, "", "font-size=\"20\" font-weight=\"bold\"");
  // Axis titles.
  o << svg_text(left + nc * cell / 2.0, 56, g.x_label, "middle", "font-size=\"15\"");
  const double ymid = top + nr * cell / 2.0;
  std::ostringstream rot;
  rot << "font-size=\"15\" transform=\"rotate(-90 22 " << ymid << ")\"";
  o << svg_text(22, ymid, g.y_label, "middle", rot.str());
  // Token labels: columns rotated, rows right-aligned.
  const int every = std::max(1, (label_font + 2 + cell - 1) / cell);
  for (int c = 0; c < nc; c += every) {
    const double x = left + c * cell + cell / 2.0, y = top - 6;
    std::ostringstream a;
    a << "font-size=\"" << label_font << "\" font-family=\"DejaVu Sans Mono, monospace\" transform=\"rotate(-60 " << x
      << " " << y << ")\"";
    o << svg_text(x, y, shorten(g.col_labels[size_t(c)], 14), "", a.str());
  }
  for (int r = 0; r < nr; r += every) {
    std::ostringstream a;
    a << "font-size=\"" << label_font << "\" font-family=\"DejaVu Sans Mono, monospace\"";
    o << svg_text(left - 6, top + r * cell + cell * 0.7, shorten(g.row_labels[size_t(r)], 18), "end", a.str());
  }
  for (int r = 0; r < nr; ++r)
    for (int c = 0; c < nc; ++c) {
      const double v = size_t(r) < g.values.size() && size_t(c) < g.values[size_t(r)].size() ? g.values[size_t(r)][size_t(c)] : 0;
      char num[32];
      std::snprintf(num, sizeof num, "%.3g", v);
      o << "<rect x=\"" << left + c * cell << "\" y=\"" << top + r * cell << "\" width=\"" << cell - 1 << "\" height=\""
        << cell - 1 << "\" fill=\"" << probability_colour(v) << "\"><title>"
        << xml_escape(g.row_labels[size_t(r)] + " \u2192 " + g.col_labels[size_t(c)] + ": " + num) << "</title></rect>\n";
      if (g.print_values && cell >= 28)
        o << svg_text(left + c * cell + cell / 2.0, top + r * cell + cell * 0.62, num, "middle",
                      std::string("font-size=\"9\" fill=\"") + (v > 0.5 ? "#fff" : "#000") + "\"");
    }
  // Legend: the colour scale with its stops.
  const int ly = top + nr * cell + 30, lx = left, lw = 300;
  o << svg_text(16, ly + 14, g.legend, "", "font-size=\"14\"");
  for (int i = 0; i < 20; ++i)
    o << "<rect x=\"" << lx + i * lw / 20 << "\" y=\"" << ly << "\" width=\"" << lw / 20 + 1 << "\" height=\"18\" fill=\""
      << probability_colour(i / 19.0) << "\"/>\n";
  o << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"" << lw << "\" height=\"18\" fill=\"none\" stroke=\"#888\"/>\n";
  for (const auto& [v, label] : g.legend_stops) o << svg_text(lx + v * lw, ly + 34, label, "middle", "font-size=\"12\"");
  if (!g.caption.empty()) o << svg_text(16, ly + 64, g.caption, "", "font-size=\"13\" fill=\"#333\"");
  return svg_document(width, height, o.str());
}

}  // namespace lmscope
