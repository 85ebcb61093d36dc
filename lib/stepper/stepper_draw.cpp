// The stepper's terminal drawings (stepper/stepper.h): shaded grids with their column
// labels, the key window over long key ranges, escaped labels, wrapping to a screen's width.
#include <sys/ioctl.h>
#include <unistd.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "stepper/stepper.h"
#include "io/format_number.h"

namespace lmscope {

namespace {

const char* shade(double p) {
  if (std::isnan(p)) return "··";
  if (p < 0.02) return "  ";
  if (p < 0.1) return "░░";
  if (p < 0.3) return "▒▒";
  if (p < 0.6) return "▓▓";
  return "██";
}

const char* kGap = "┊ ";   // the column between the sink and the key window

// One code point of s at i: its bytes' count (1 for a bad byte) and display width (0..2).
std::pair<size_t, int> next_char(const std::string& s, size_t i) {
  utf8proc_int32_t cp = 0;
  const utf8proc_ssize_t n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()) + i, utf8proc_ssize_t(s.size() - i), &cp);
  if (n <= 0) return {1, 1};
  return {size_t(n), std::clamp(utf8proc_charwidth(cp), 0, 2)};
}

// A label cut into cells of two display columns (utf8proc's width: a CJK character fills a
// cell), at most max_cells; a space shows as ␣ so that " world" keeps its leading space.
std::vector<std::string> label_cells(const std::string& label, size_t max_cells) {
  std::vector<std::string> cells(1);
  std::vector<int> widths(1, 0);
  for (size_t i = 0; i < label.size();) {
    const auto [n, width] = next_char(label, i);
    const std::string ch = label[i] == ' ' ? "␣" : label.substr(i, n);
    i += n;
    const int w = std::max(1, width);
    if (widths.back() + w > 2) {
      if (cells.size() == max_cells) break;
      cells.emplace_back();
      widths.push_back(0);
    }
    cells.back() += ch;
    widths.back() += w;
  }
  for (size_t c = 0; c < cells.size(); ++c) cells[c] += std::string(size_t(2 - widths[c]), ' ');
  return cells;
}

}  // namespace

std::string printable_label(const std::string& text) {
  std::string o;
  for (unsigned char c : text) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(c));
      o += hex;
    }
    else o += char(c);
  }
  return o;
}

KeyWindow key_window(int64_t S, int64_t cells, int64_t start) {
  KeyWindow w;
  if (S <= cells || cells < kSinkKeys + 2) {   // every key fits (or too narrow for a window: the last keys)
    const int64_t c0 = std::max<int64_t>(0, S - std::max<int64_t>(1, cells));
    for (int64_t s = c0; s < S; ++s) w.cols.push_back(s);
    w.start = c0;
    w.note = c0 == 0 ? "" : "keys " + std::to_string(c0) + "-" + std::to_string(S - 1) + " of 0-" + std::to_string(S - 1) + " shown";
    return w;
  }
  const int64_t width = cells - kSinkKeys - 1;   // the window after the sink and the gap
  w.start = start < 0 ? S - width : std::clamp(start, kSinkKeys, S - width);
  if (w.start == kSinkKeys) {   // the window meets the sink: no gap
    for (int64_t s = 0; s < kSinkKeys + width + 1; ++s) w.cols.push_back(s);
    w.note = "keys 0-" + std::to_string(kSinkKeys + width) + " of 0-" + std::to_string(S - 1) + " shown";
    return w;
  }
  for (int64_t s = 0; s < kSinkKeys; ++s) w.cols.push_back(s);
  w.cols.push_back(-1);
  for (int64_t s = w.start; s < w.start + width; ++s) w.cols.push_back(s);
  w.note = "keys 0-" + std::to_string(kSinkKeys - 1) + " and " + std::to_string(w.start) + "-" +
           std::to_string(w.start + width - 1) + " of 0-" + std::to_string(S - 1) + " shown";
  return w;
}

std::string shade_grid(const std::vector<double>& values, int64_t rows, const std::vector<int64_t>& col_positions,
                       const std::vector<std::string>& row_labels, const std::vector<std::string>& col_labels) {
  std::ostringstream o;
  const int64_t cols = int64_t(col_positions.size());
  size_t lw = 0;
  for (const auto& l : row_labels) lw = std::max(lw, l.size());
  const std::string indent(lw + 2, ' ');
  auto each_col = [&](auto cell) {
    for (int64_t c = 0; c < cols; ++c) o << (col_positions[size_t(c)] < 0 ? kGap : cell(c, col_positions[size_t(c)]));
  };
  if (!col_labels.empty()) {
    std::vector<std::vector<std::string>> cells;
    size_t lines = 0;
    for (int64_t c = 0; c < cols; ++c) {
      cells.push_back(label_cells(size_t(c) < col_labels.size() ? col_labels[size_t(c)] : "", 3));
      lines = std::max(lines, cells.back().size());
    }
    for (size_t l = 0; l < lines; ++l) {
      o << indent;
      each_col([&](int64_t c, int64_t) { return l < cells[size_t(c)].size() ? cells[size_t(c)][l] : std::string("  "); });
      o << "\n";
    }
  }
  o << indent;
  each_col([](int64_t, int64_t pos) { return pos % 10 == 0 ? fmt("%-2.0f", double(pos / 10 % 10)) : std::string("  "); });
  o << "\n" << indent;
  each_col([](int64_t, int64_t pos) { return fmt("%-2.0f", double(pos % 10)); });
  o << "\n";
  for (int64_t r = 0; r < rows; ++r) {
    const std::string label = size_t(r) < row_labels.size() ? row_labels[size_t(r)] : "";
    o << std::string(lw - label.size(), ' ') << label << " |";
    each_col([&](int64_t c, int64_t) { return std::string(shade(values[size_t(r * cols + c)])); });
    o << "|\n";
  }
  return o.str();
}

std::string shade_grid(const std::vector<double>& values, int64_t rows, int64_t cols,
                       const std::vector<std::string>& row_labels, int64_t col_offset,
                       const std::vector<std::string>& col_labels) {
  std::vector<int64_t> positions(size_t(std::max<int64_t>(0, cols)));
  std::iota(positions.begin(), positions.end(), col_offset);
  return shade_grid(values, rows, positions, row_labels, col_labels);
}

std::pair<int, int> terminal_size(int fd) {
  winsize ws{};
  if (!::isatty(fd) || ::ioctl(fd, TIOCGWINSZ, &ws) != 0) return {0, 0};
  return {int(ws.ws_row), int(ws.ws_col)};
}

std::vector<std::string> wrap_lines(const std::string& text, int cols) {
  std::vector<std::string> lines;
  std::string line;
  int width = 0;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\n') {
      lines.push_back(std::move(line));
      line.clear();
      width = 0;
      ++i;
      continue;
    }
    const auto [n, w] = next_char(text, i);
    if (width + w > cols) {   // at the last space when it leaves at least half a line, else here
      const size_t space = line.rfind(' ');
      if (space != std::string::npos && space >= line.size() / 2 && line.find_first_not_of(' ') < space) {
        std::string rest = line.substr(space + 1);
        line.erase(space);
        lines.push_back(std::move(line));
        line = std::move(rest);
        width = 0;
        for (size_t j = 0; j < line.size(); j += next_char(line, j).first) width += next_char(line, j).second;
      } else {
        lines.push_back(std::move(line));
        line.clear();
        width = 0;
      }
    }
    line += text.substr(i, n);
    width += w;
    i += n;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace lmscope
