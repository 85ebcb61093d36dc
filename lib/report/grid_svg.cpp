#include "report/grid_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/svg.h"

namespace lmscope {

namespace {

constexpr double kMono = 0.602;     // DejaVu Sans Mono: em per character
constexpr double kLineBox = 1.17;   // a DejaVu line box (ascent + descent) in em: labels closer than this touch
constexpr double kSin60 = 0.866, kCos60 = 0.5;
constexpr int kMaxWidth = 1280, kMaxHeight = 720;
constexpr size_t kColChars = 12, kRowChars = 16;   // token labels are cut to this many characters

// The largest label font (8..13 px) whose line box fits `spacing` px, or 8 when none does.
int label_font_for(double spacing) { return std::clamp(int(spacing / kLineBox), 8, 13); }

double widest(const std::vector<std::string>& labels, size_t chars, double font) {
  double w = 0;
  for (const std::string& l : labels) w = std::max(w, text_width(shorten(l, chars), font, kMono));
  return w;
}

// The label of cells first..last (a block): the first one's, shortened, and the range.
std::string block_label(const std::vector<std::string>& labels, size_t first, size_t last) {
  if (first == last) return labels[first];
  return shorten(labels[first], 5) + " " + std::to_string(first) + "\u2013" + std::to_string(last);
}

}  // namespace

GridPicture grid_in_blocks(const GridPicture& g, int* n_out) {
  const size_t nr = g.row_labels.size(), nc = g.col_labels.size();
  const size_t n = std::max({size_t(1), (nr + kMaxBlockRows - 1) / kMaxBlockRows, (nc + kMaxBlockCols - 1) / kMaxBlockCols});
  if (n_out) *n_out = int(n);
  if (n == 1) return g;
  GridPicture b = g;
  b.row_labels.clear();
  b.col_labels.clear();
  b.values.clear();
  b.print_values = false;   // a block's number is not one the trace holds
  for (size_t c = 0; c < nc; c += n) b.col_labels.push_back(block_label(g.col_labels, c, std::min(nc, c + n) - 1));
  for (size_t r0 = 0; r0 < nr; r0 += n) {
    const size_t r1 = std::min(nr, r0 + n);
    b.row_labels.push_back(block_label(g.row_labels, r0, r1 - 1));
    std::vector<double> line;
    for (size_t c0 = 0; c0 < nc; c0 += n) {
      const size_t c1 = std::min(nc, c0 + n);
      double sum = 0;
      for (size_t r = r0; r < r1; ++r)
        for (size_t c = c0; c < c1; ++c) sum += r < g.values.size() && c < g.values[r].size() ? g.values[r][c] : 0;
      const double cells = g.blocks == GridPicture::Blocks::Mean ? double((r1 - r0) * (c1 - c0)) : double(r1 - r0);
      line.push_back(sum / cells);
    }
    b.values.push_back(line);
  }
  const std::string nn = std::to_string(std::min(n, nr)) + " \u00d7 " + std::to_string(std::min(n, nc));   // a decode step: 1 x n
  b.caption = g.caption + " Each cell is a block of " + nn + " " + g.block_what + " (" + std::to_string(nr) + " \u00d7 " +
              std::to_string(nc) + " do not fit 1280 \u00d7 720 at 8 px a cell): " +
              (g.blocks == GridPicture::Blocks::Mean ? "the mean of its cells."
                                                     : "the probability its query tokens put on its key tokens (summed over the keys, "
                                                       "averaged over the queries).");
  return b;
}

// Layout, top to bottom: title, x-axis title, column labels (rotated -60 degrees, their height
// set by the longest), the grid, then the y-axis title when it is longer than the grid is high
// (a one-row decode step), the legend (title, colour bar, stops) and the caption, wrapped to
// the picture's width. Cells are as large as 1280 x 720 allow (8..40 px); a label font is
// chosen so that neighbouring labels do not touch, and when even 8 px is too big for a cell
// only every n-th label is written.
std::string grid_svg(const GridPicture& whole) {
  const GridPicture g = grid_in_blocks(whole);
  const int nr = int(g.row_labels.size()), nc = int(g.col_labels.size());
  const double low = g.is_signed ? -1.0 : 0.0;   // the value at the colour scale's left end
  auto colour = [&](double v) { return g.is_signed ? signed_colour(v) : probability_colour(v); };
  const double y_title_len = text_width(g.y_label, 15);
  // The cell size fixes the label font, which fixes the margins, which fix the cell size:
  // two passes from the largest cell settle it.
  int cell = 40, font = 13, left = 0, top = 0, right = 0, width = 0, bottom = 0;
  bool y_title_rotated = true;
  std::vector<std::string> caption;
  for (int pass = 0; pass < 3; ++pass) {
    font = label_font_for(kSin60 * cell);
    const double col_len = widest(g.col_labels, kColChars, font), row_len = widest(g.row_labels, kRowChars, font);
    y_title_rotated = y_title_len + 8 <= nr * cell + 40;
    left = int((y_title_rotated ? 34 : 16) + row_len + 8);
    top = int(66 + col_len * kSin60 + font * kCos60 + 8);
    right = int(std::max(24.0, col_len * kCos60 + font + 8));
    width = std::max({left + nc * cell + right, 720, int(text_width(g.title, 20, 0.7)) + 32});
    caption = wrap_text(g.caption, width - 32, 13);
    const std::vector<std::string> legend = wrap_text(g.legend, width - 32, 14);
    bottom = 66 + (y_title_rotated ? 0 : 24) + 18 * int(legend.size() + caption.size());   // as drawn below
    const int fit = std::min((kMaxWidth - 40 - left - right) / std::max(nc, 1), (kMaxHeight - top - bottom) / std::max(nr, 1));
    const int next = std::clamp(fit, 8, 40);
    if (next == cell && pass > 0) break;
    cell = next;
  }
  // A grid of fewer columns than rows (lmscope-patch's 30 layers x 9 heads) gets cells wider
  // than tall, up to 80 px, so that it fills the picture's width instead of a strip at its left.
  const int cw = nc < nr ? std::clamp((std::max(width, 720) - 32 - left - right) / std::max(nc, 1), cell, std::max(cell, 80)) : cell;
  width = std::max(width, left + nc * cw + right);
  const int height = top + nr * cell + bottom;
  std::ostringstream o;
  o << svg_text(16, 30, g.title, "", "font-size=\"20\" font-weight=\"bold\"");
  // The x-axis title centred over the grid, kept inside the picture.
  const double x_title_len = text_width(g.x_label, 15);
  const double xmid = std::clamp(left + nc * cw / 2.0, 16 + x_title_len / 2, width - 16 - x_title_len / 2);
  o << svg_text(xmid, 56, g.x_label, "middle", "font-size=\"15\"");
  const double ymid = top + nr * cell / 2.0;
  if (y_title_rotated) {
    std::ostringstream rot;
    rot << "font-size=\"15\" transform=\"rotate(-90 22 " << ymid << ")\"";
    o << svg_text(22, ymid, g.y_label, "middle", rot.str());
  }
  // Token labels: columns rotated, rows right-aligned; every n-th when the font cannot shrink further.
  const std::string mono = "font-family=\"DejaVu Sans Mono, monospace\"";
  const int col_every = std::max(1, int(std::ceil(font * kLineBox / (kSin60 * cw))));
  const int row_every = std::max(1, int(std::ceil(font * kLineBox / cell)));
  for (int c = 0; c < nc; c += col_every) {
    const double x = left + c * cw + cw / 2.0 + font * 0.35, y = top - 6;
    std::ostringstream a;
    a << "font-size=\"" << font << "\" " << mono << " transform=\"rotate(-60 " << x << " " << y << ")\"";
    o << svg_text(x, y, shorten(g.col_labels[size_t(c)], kColChars), "", a.str());
  }
  for (int r = 0; r < nr; r += row_every)
    o << svg_text(left - 6, top + r * cell + cell / 2.0 + font * 0.35, shorten(g.row_labels[size_t(r)], kRowChars), "end",
                  "font-size=\"" + std::to_string(font) + "\" " + mono);
  // Cells, with the value written in when it fits: two decimals (a probability of 0.005 and
  // more; smaller ones read 0.00 and are left to the tooltip).
  const int value_font = std::min(11, int((cell - 4) / (4 * 0.64)));
  for (int r = 0; r < nr; ++r)
    for (int c = 0; c < nc; ++c) {
      const double v = size_t(r) < g.values.size() && size_t(c) < g.values[size_t(r)].size() ? g.values[size_t(r)][size_t(c)] : 0;
      char num[32];
      std::snprintf(num, sizeof num, "%.3g", v);
      o << "<rect x=\"" << left + c * cw << "\" y=\"" << top + r * cell << "\" width=\"" << cw - 1 << "\" height=\""
        << cell - 1 << "\" fill=\"" << colour(v) << "\"><title>"
        << xml_escape(g.row_labels[size_t(r)] + " \u2192 " + g.col_labels[size_t(c)] + ": " + num) << "</title></rect>\n";
      if (g.print_values && value_font >= 7 && std::fabs(v) >= 0.005) {
        char two[16];
        std::snprintf(two, sizeof two, "%.2f", v);
        o << svg_text(left + c * cw + (cw - 1) / 2.0, top + r * cell + (cell - 1) / 2.0 + value_font * 0.35, two, "middle",
                      "font-size=\"" + std::to_string(value_font) + "\" fill=\"" + (std::fabs(v) > 0.5 ? "#fff" : "#000") + "\"");
      }
    }
  int y = top + nr * cell + 8;
  if (!y_title_rotated) {   // too long for the grid's height: a line under it
    o << svg_text(16, y + 16, (nr == 1 ? "row: " : "rows: ") + g.y_label, "", "font-size=\"15\"");
    y += 24;
  }
  // Legend: its title, the colour scale, its stops.
  y += 8;
  for (const std::string& line : wrap_text(g.legend, width - 32, 14)) {
    y += 18;
    o << svg_text(16, y, line, "", "font-size=\"14\"");
  }
  const int lw = 300;
  y += 8;
  for (int i = 0; i < 20; ++i)
    o << "<rect x=\"" << 16 + i * lw / 20 << "\" y=\"" << y << "\" width=\"" << lw / 20 + 1 << "\" height=\"16\" fill=\""
      << colour(low + (1 - low) * i / 19.0) << "\"/>\n";
  o << "<rect x=\"16\" y=\"" << y << "\" width=\"" << lw << "\" height=\"16\" fill=\"none\" stroke=\"#888\"/>\n";
  for (const auto& [v, label] : g.legend_stops) {
    // The end stops are aligned inward so that "0 = corrupted" does not run off the left edge.
    const std::string anchor = v <= low ? "start" : v >= 1 ? "end" : "middle";
    o << svg_text(16 + (v - low) / (1 - low) * lw, y + 30, label, anchor, "font-size=\"12\"");
  }
  y += 30;
  for (const std::string& line : caption) {
    y += 18;
    o << svg_text(16, y, line, "", "font-size=\"13\" fill=\"#333\"");
  }
  return svg_document(width, std::max(height, y + 12), o.str());
}

}  // namespace lmscope
