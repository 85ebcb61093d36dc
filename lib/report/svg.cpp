#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lmscope {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') o += ' ';
        else o += c;
    }
  }
  return o;
}

std::string probability_colour(double p) {
  const double t = std::isnan(p) ? 0.0 : std::clamp(p, 0.0, 1.0);   // NaN (a damaged trace): white
  char buf[8];
  // white (255,255,255) -> dark blue (8,48,107): the same scale as the report page's.
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(255 - t * (255 - 8) + 0.5), int(255 - t * (255 - 48) + 0.5),
                int(255 - t * (255 - 107) + 0.5));
  return buf;
}

std::string signed_colour(double v) {
  const double t = std::isnan(v) ? 0.0 : std::clamp(v, -1.0, 1.0);
  if (t >= 0) return probability_colour(t);
  char buf[8];
  // white (255,255,255) -> dark red (103,0,13), the red end of ColorBrewer's RdBu.
  const double a = -t;
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(255 - a * (255 - 103) + 0.5), int(255 - a * 255 + 0.5),
                int(255 - a * (255 - 13) + 0.5));
  return buf;
}

std::string svg_document(int width, int height, const std::string& body, int font_size) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << " " << height << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"" << font_size
    << "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << body << "</svg>\n";
  return o.str();
}

std::string svg_text(double x, double y, const std::string& text, const std::string& anchor, const std::string& extra) {
  std::ostringstream o;
  o << "<text x=\"" << x << "\" y=\"" << y << "\"";
  if (!anchor.empty()) o << " text-anchor=\"" << anchor << "\"";
  if (!extra.empty()) o << " " << extra;
  o << ">" << xml_escape(text) << "</text>\n";
  return o.str();
}

std::string shorten(const std::string& s, size_t n) {
  size_t chars = 0, i = 0;
  while (i < s.size()) {
    if (chars == n - 1) {
      // More than one character left: cut here.
      size_t j = i, rest = 0;
      while (j < s.size()) {
        if ((static_cast<unsigned char>(s[j]) & 0xC0) != 0x80) ++rest;
        ++j;
      }
      if (rest > 1) return s.substr(0, i) + "\u2026";
      return s;
    }
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++chars;
  }
  return s;
}

double text_width(const std::string& s, double font_px, double em_per_char) {
  double em = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) em += em_per_char;
    else if ((c & 0xC0) != 0x80) em += 1.0;   // the first byte of a wider character
  }
  return em * font_px;
}

std::vector<std::string> wrap_text(const std::string& s, double max_px, double font_px) {
  std::vector<std::string> lines;
  std::istringstream words(s);
  std::string w, line;
  while (words >> w) {
    const std::string longer = line.empty() ? w : line + " " + w;
    if (!line.empty() && text_width(longer, font_px) > max_px) {
      lines.push_back(line);
      line = w;
    } else {
      line = longer;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace lmscope
