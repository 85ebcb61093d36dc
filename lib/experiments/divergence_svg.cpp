#include "experiments/divergence_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "io/format_number.h"

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
// A cell's error: 1 significant digit with an exponent (3e-05), "0", "inf" / "-inf"; nothing for NaN.
std::string short_num(double v) { return std::isnan(v) ? "" : fmt_num(v, 1, /*exponent=*/true); }
}  // namespace

std::string heatmap_svg(const std::string& title, const std::vector<std::string>& col_labels,
                        const std::vector<HeatmapPanel>& panels, const std::vector<std::string>& caption) {
  constexpr int kMaxWidth = 1280, kFont = 11, kColFont = 10, cell_h = 22, top = 40;
  const int ncol = int(col_labels.size());
  double label_px = 0, note_px = 0, col_px = 0;
  for (const HeatmapPanel& p : panels) {
    for (const std::string& l : p.row_labels) label_px = std::max(label_px, text_width(l, kFont));
    for (const std::string& n : p.notes) note_px = std::max(note_px, text_width(n, kFont));
  }
  for (const std::string& c : col_labels) col_px = std::max(col_px, text_width(c, kColFont));
  const int label_w = int(label_px) + 16;
  // Cells take what the labels and up to 420 px of notes leave of 1280 px (16..44 px wide).
  const int note_w = int(std::min(note_px, 420.0)) + 12;
  const int cell_w = std::clamp((kMaxWidth - 8 - label_w - note_w) / std::max(ncol, 1), 16, 44);
  const int width = std::min(kMaxWidth, label_w + ncol * cell_w + note_w + 8);
  const size_t note_chars = size_t(std::max(8.0, (width - 8 - label_w - ncol * cell_w - 12) / (0.62 * kFont)));
  const int col_every = std::max(1, int(std::ceil((col_px + 4) / cell_w)));
  std::ostringstream o;   // the body; the header needs the height, known at the end
  o << "<text x=\"8\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  int y = top;
  for (const HeatmapPanel& p : panels) {
    o << "<text x=\"8\" y=\"" << y + 14 << "\" font-size=\"12\" font-weight=\"bold\">"
      << xml_escape(shorten(p.title, size_t((width - 16) / (0.7 * 12)))) << "</text>\n";
    y += 22;
    for (int c = 0; c < ncol; c += col_every)
      o << "<text x=\"" << label_w + c * cell_w + cell_w / 2 << "\" y=\"" << y + 10 << "\" text-anchor=\"middle\" font-size=\""
        << kColFont << "\" fill=\"#444\">" << xml_escape(col_labels[size_t(c)]) << "</text>\n";
    y += 16;
    for (size_t r = 0; r < p.row_labels.size(); ++r) {
      o << "<text x=\"8\" y=\"" << y + 15 << "\">" << xml_escape(p.row_labels[r]) << "</text>\n";
      for (int c = 0; c < ncol; ++c) {
        auto at = [&](const std::vector<std::vector<double>>& m) {
          return r < m.size() && size_t(c) < m[r].size() ? m[r][size_t(c)] : NAN;
        };
        const double v = at(p.values), later = at(p.values_later);
        const bool split = !p.values_later.empty();
        const bool f = r < p.fail.size() && size_t(c) < p.fail[r].size() && p.fail[r][size_t(c)];
        const int x = label_w + c * cell_w, h = cell_h - 2;
        std::string tip = p.row_labels[r] + " " + col_labels[size_t(c)] + ": ";
        tip += split ? "prefill " + short_num(v) + ", decode steps " + short_num(later) : short_num(v);
        if (split) {
          o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w - 2 << "\" height=\"" << h / 2
            << "\" fill=\"" << error_colour(v) << "\"/>\n<rect x=\"" << x << "\" y=\"" << y + h / 2 << "\" width=\""
            << cell_w - 2 << "\" height=\"" << h - h / 2 << "\" fill=\"" << error_colour(later) << "\"/>\n";
        }
        o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell_w - 2 << "\" height=\"" << h << "\" fill=\""
          << (split ? "none" : error_colour(v)) << "\" stroke=\"" << (f ? "#000" : "#ccc") << "\" stroke-width=\""
          << (f ? 2 : 1) << "\"><title>" << xml_escape(tip) << "</title></rect>\n";
        // The number in a failing whole cell, when it fits (a split cell's halves are too low).
        if (f && !split && text_width(short_num(v), 9) + 4 <= cell_w)
          o << "<text x=\"" << x + cell_w / 2 - 1 << "\" y=\"" << y + 14 << "\" text-anchor=\"middle\" font-size=\"9\" fill=\""
            << (v > 1e-2 ? "#fff" : "#000") << "\">" << short_num(v) << "</text>\n";
      }
      if (r < p.notes.size() && !p.notes[r].empty())
        o << "<text x=\"" << label_w + ncol * cell_w + 12 << "\" y=\"" << y + 15 << "\" fill=\"#333\">"
          << xml_escape(shorten(p.notes[r], note_chars)) << "</text>\n";
      y += cell_h;
    }
    y += 24;
  }
  // Legend: the colour scale.
  y += 8;
  const std::string legend = "relative error:";
  o << "<text x=\"8\" y=\"" << y + 12 << "\">" << legend << "</text>\n";
  const int scale_x = std::max(label_w, int(text_width(legend, kFont)) + 20);
  for (int e = -8; e <= 0; ++e) {
    const int x = scale_x + (e + 8) * 40;
    o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"38\" height=\"16\" fill=\"" << error_colour(std::pow(10.0, e))
      << "\" stroke=\"#ccc\"/>\n";
    o << "<text x=\"" << x + 19 << "\" y=\"" << y + 28 << "\" text-anchor=\"middle\" font-size=\"9\">1e" << e << "</text>\n";
  }
  y += 34;
  for (const std::string& c : caption)
    for (const std::string& line : wrap_text(c, width - 16, kFont)) {
      y += 16;
      o << "<text x=\"8\" y=\"" << y << "\" fill=\"#333\">" << xml_escape(line) << "</text>\n";
    }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y + 12 << "\" viewBox=\"0 0 "
      << width << " " << y + 12 << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"" << kFont << "\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << o.str() << "</svg>\n";
  return svg.str();
}

}  // namespace lmscope
