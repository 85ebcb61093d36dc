#include "experiments/divergence_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lmscope {

std::string error_colour(double rel) {
  if (std::isnan(rel)) return "#dddddd";
  // t = 0 at 1e-8 (white), 1 at >= 1 (dark red); through yellow and orange.
  double lg = rel > 0 ? std::log10(rel) : -12;
  if (std::isinf(rel)) lg = 1;
  double t = std::clamp((lg + 8.0) / 8.0, 0.0, 1.0);
  struct Stop { double t; int r, g, b; };
  static const Stop stops[] = {{0.0, 255, 255, 255}, {0.45, 255, 246, 180}, {0.6, 253, 200, 90},
                               {0.8, 240, 100, 40},  {1.0, 150, 0, 20}};
  int i = 0;
  while (i < 3 && t > stops[i + 1].t) ++i;
  const Stop &a = stops[i], &b = stops[i + 1];
  double u = (t - a.t) / (b.t - a.t);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(a.r + u * (b.r - a.r)), int(a.g + u * (b.g - a.g)),
                int(a.b + u * (b.b - a.b)));
  return buf;
}

namespace {
std::string short_num(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return "inf";
  if (v == 0) return "0";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}
}  // namespace

std::string heatmap_svg(const std::string& title, const std::vector<std::string>& col_labels,
                        const std::vector<HeatmapPanel>& panels, const std::string& caption) {
  const int cell_w = 44, cell_h = 22, label_w = 110, note_w = 460, top = 40;
  const int ncol = int(col_labels.size());
  const int width = std::max(label_w + ncol * cell_w + 16 + note_w, 16 + int(caption.size()) * 6);
  std::ostringstream o;   // the body; the header needs the height, known at the end
  o << "<text x=\"8\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  int y = top;
  for (const HeatmapPanel& p : panels) {
    o << "<text x=\"8\" y=\"" << y + 14 << "\" font-size=\"12\" font-weight=\"bold\">" << xml_escape(p.title)
      << "</text>\n";
    y += 22;
    for (int c = 0; c < ncol; ++c)
      o << "<text x=\"" << label_w + c * cell_w + cell_w / 2 << "\" y=\"" << y + 10
        << "\" text-anchor=\"middle\" fill=\"#444\">" << xml_escape(col_labels[size_t(c)]) << "</text>\n";
    y += 16;
    for (size_t r = 0; r < p.row_labels.size(); ++r) {
      o << "<text x=\"8\" y=\"" << y + 15 << "\">" << xml_escape(p.row_labels[r]) << "</text>\n";
      for (int c = 0; c < ncol; ++c) {
        double v = (r < p.values.size() && size_t(c) < p.values[r].size()) ? p.values[r][size_t(c)] : NAN;
        bool f = r < p.fail.size() && size_t(c) < p.fail[r].size() && p.fail[r][size_t(c)];
        const int x = label_w + c * cell_w;
        o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w - 2 << "\" height=\"" << cell_h - 2
          << "\" fill=\"" << error_colour(v) << "\" stroke=\"" << (f ? "#000" : "#ccc") << "\" stroke-width=\""
          << (f ? 2 : 1) << "\"><title>" << xml_escape(p.row_labels[r] + " " + col_labels[size_t(c)] + ": " + short_num(v))
          << "</title></rect>\n";
        if (f)
          o << "<text x=\"" << x + cell_w / 2 - 1 << "\" y=\"" << y + 14 << "\" text-anchor=\"middle\" font-size=\"9\" fill=\""
            << (v > 1e-2 ? "#fff" : "#000") << "\">" << short_num(v) << "</text>\n";
      }
      if (r < p.notes.size() && !p.notes[r].empty())
        o << "<text x=\"" << label_w + ncol * cell_w + 12 << "\" y=\"" << y + 15 << "\" fill=\"#333\">"
          << xml_escape(p.notes[r]) << "</text>\n";
      y += cell_h;
    }
    y += 24;
  }
  // Legend: the colour scale.
  y += 8;
  o << "<text x=\"8\" y=\"" << y + 12 << "\">worst relative error:</text>\n";
  for (int e = -8; e <= 0; ++e) {
    const int x = label_w + 30 + (e + 8) * 40;
    o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"38\" height=\"16\" fill=\"" << error_colour(std::pow(10.0, e))
      << "\" stroke=\"#ccc\"/>\n";
    o << "<text x=\"" << x + 19 << "\" y=\"" << y + 28 << "\" text-anchor=\"middle\" font-size=\"9\">1e" << e << "</text>\n";
  }
  y += 48;
  o << "<text x=\"8\" y=\"" << y << "\" fill=\"#333\">" << xml_escape(caption) << "</text>\n";
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y + 16
      << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << o.str() << "</svg>\n";
  return svg.str();
}

}  // namespace lmscope
