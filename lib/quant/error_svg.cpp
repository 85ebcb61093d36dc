#include "quant/error_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "experiments/divergence_svg.h"   // xml_escape

namespace lmscope::quant {

std::string error_by_layer_svg(const QuantReport& r, const std::string& title) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  const int left = 70, top = 40, plot_w = 560, plot_h = 300, legend_w = 170;
  const int L = std::max(r.num_layers, 1);
  // y range: whole decades around the data, floor 1e-8.
  double lo = 0, hi = -8;
  bool any = false;
  for (const SchemeResult& s : r.schemes)
    for (const auto& row : s.layer_errors)
      if (row.back() > 0) {
        const double lg = std::log10(row.back());
        lo = any ? std::min(lo, lg) : lg, hi = any ? std::max(hi, lg) : lg, any = true;
      }
  const double y0 = any ? std::max(-8.0, std::floor(lo)) : -8.0, y1 = any ? std::max(y0 + 1, std::ceil(hi)) : 0.0;
  auto px = [&](int l) { return left + (L == 1 ? 0.0 : double(l) * plot_w / double(L - 1)); };
  auto py = [&](double v) {
    const double lg = v > 0 ? std::clamp(std::log10(v), y0, y1) : y0;
    return top + plot_h - (lg - y0) / (y1 - y0) * plot_h;
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + plot_w + legend_w + 30 << "\" height=\""
    << top + plot_h + 60 << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"8\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n"
    << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\"" << plot_h
    << "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (int e = int(y0); e <= int(y1); ++e) {
    const double y = py(std::pow(10.0, e));
    o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#eee\"/>\n<text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">1e" << e << "</text>\n";
  }
  const int step = std::max(1, L / 10);
  for (int l = 0; l < L; l += step)
    o << "<text x=\"" << px(l) << "\" y=\"" << top + plot_h + 16 << "\" text-anchor=\"middle\">" << l << "</text>\n";
  o << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << top + plot_h + 36
    << "\" text-anchor=\"middle\">layer</text>\n<text x=\"16\" y=\"" << top + plot_h / 2 << "\" transform=\"rotate(-90 16 "
    << top + plot_h / 2 << ")\" text-anchor=\"middle\">relative error of resid_post (log)</text>\n";
  for (size_t i = 0; i < r.schemes.size(); ++i) {
    const SchemeResult& s = r.schemes[i];
    const char* c = colours[i % 8];
    o << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\"";
    for (size_t l = 0; l < s.layer_errors.size(); ++l) o << px(int(l)) << "," << py(s.layer_errors[l].back()) << " ";
    o << "\"/>\n";
    const int ly = top + 10 + int(i) * 18;
    o << "<line x1=\"" << left + plot_w + 14 << "\" x2=\"" << left + plot_w + 40 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n<text x=\"" << left + plot_w + 46 << "\" y=\"" << ly + 4 << "\">"
      << xml_escape(s.name) << "</text>\n";
  }
  o << "<text x=\"8\" y=\"" << top + plot_h + 54 << "\" fill=\"#333\">error = max|scheme - float32| / max|float32|; "
    << "0 is drawn at the floor</text>\n</svg>\n";
  return o.str();
}

}  // namespace lmscope::quant
