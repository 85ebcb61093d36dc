#include "experiments/padding_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/svg.h"
#include "tokenizer/tokenizer.h"

namespace lmscope {

namespace {

bool left_padded(PaddingMode m) { return m == PaddingMode::Left || m == PaddingMode::LeftColpos; }

std::string piece(const ModelContext& m, int32_t id) {
  if (m.tokenizer) try {
      return m.tokenizer->token_display(id);
    } catch (const std::exception&) {   // an id the tokenizer does not know: its number
    }
  return std::to_string(id);
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke,
                 double stroke_w, const std::string& extra = "") {
  std::ostringstream o;
  o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
    << "\" stroke=\"" << stroke << "\" stroke-width=\"" << stroke_w << "\"" << (extra.empty() ? "" : " " + extra) << "/>\n";
  return o.str();
}

}  // namespace

std::string padding_svg(const PaddingReport& r, const ModelContext& m) {
  const int B = int(r.rows.size()), P = int(r.width);
  const int left = 180, top = 96, note_w = 330;
  // Cells of 14 px and more carry their token; a longer batch (more than 53 columns) keeps the
  // picture 1280 px wide with narrower cells, down to 1 px, drawn without text.
  const int cell_w = std::clamp((1260 - left - note_w) / std::max(P, 1), 1, 64);
  const bool text = cell_w >= 14;
  const int number_every = text ? 1 : 10 * int(std::ceil(30.0 / (10 * cell_w)));   // column numbers 30 px apart
  const int cell_h = 30, panel_gap = 30;
  const int panel_h = 22 + B * (cell_h + 4);
  const int n_modes = int(r.modes.size());
  const int width = std::max(1280, left + P * cell_w + note_w + 20);
  const int legend_y = top + n_modes * (panel_h + panel_gap);
  const int height = legend_y + 90;
  const int font = std::clamp(cell_w / 5, 8, 12);
  std::ostringstream o;
  o << svg_text(16, 30, "Padding side: " + std::to_string(B) + " prompts in one batch of " + std::to_string(P) +
                            " columns, four ways", "", "font-size=\"22\" font-weight=\"bold\"");
  o << svg_text(16, 54, "Each row is one prompt; the model reads the red-framed column to choose the row's next token. "
                        "Right: does the row then match the prompt run alone?", "", "font-size=\"14\" fill=\"#333\"");
  o << svg_text(left + P * cell_w / 2.0, top - 14, "column (token position in the padded batch, 0.." + std::to_string(P - 1) + ")",
                "middle", "font-size=\"13\"");
  for (int c = 0; c < P; c += number_every)
    o << svg_text(left + c * cell_w + cell_w / 2.0, top - 1, std::to_string(c), "middle", "font-size=\"10\" fill=\"#666\"");
  for (int mi = 0; mi < n_modes; ++mi) {
    const PaddingMode mode = r.modes[size_t(mi)];
    const int y0 = top + mi * (panel_h + panel_gap) + 8;
    o << svg_text(16, y0 + 14, padding_mode_name(mode), "", "font-size=\"16\" font-weight=\"bold\"");
    o << svg_text(16, y0 + 32, left_padded(mode) ? "(left padding)" : "(right padding)", "", "font-size=\"12\" fill=\"#555\"");
    for (int b = 0; b < B; ++b) {
      const PaddingRow& row = r.rows[size_t(b)];
      const int y = y0 + b * (cell_h + 4);
      const int pads = int(row.pads), real = int(row.prompt.size());
      o << svg_text(left - 8, y + cell_h * 0.65, "row " + std::to_string(b), "end", "font-size=\"13\"");
      for (int c = 0; c < P; ++c) {
        const int k = left_padded(mode) ? c - pads : c;   // index into the row's own tokens
        const bool is_pad = k < 0 || k >= real;
        const double x = left + c * cell_w;
        const int gap = text ? 2 : 0;
        if (!text) {
          o << rect(x, y, cell_w - gap, cell_h, is_pad ? "#d9d9d9" : "#e8f0fa", is_pad ? "#d9d9d9" : "#e8f0fa", 0);
          continue;
        }
        if (is_pad) {
          o << rect(x, y, cell_w - 2, cell_h, "#d9d9d9", "#999", 1, "stroke-dasharray=\"3,2\"");
          o << svg_text(x + cell_w / 2.0 - 1, y + cell_h * 0.55, "PAD", "middle",
                        "font-size=\"" + std::to_string(font) + "\" fill=\"#666\"");
        } else {
          o << rect(x, y, cell_w - 2, cell_h, "#e8f0fa", "#4a7fb5", 1);
          o << svg_text(x + cell_w / 2.0 - 1, y + cell_h * 0.55, shorten(piece(m, row.prompt[size_t(k)]), std::max(2, cell_w / 7)),
                        "middle", "font-size=\"" + std::to_string(font) + "\" font-family=\"DejaVu Sans Mono, monospace\"");
        }
        // The padding mask bit of the column (1 = a real token the others may attend to).
        o << svg_text(x + cell_w - 5, y + cell_h - 3, is_pad ? "0" : "1", "end", "font-size=\"8\" fill=\"#888\"");
      }
      // The column this mode reads the row's next token from.
      for (const ModeRow& mr : row.modes)
        if (mr.mode == mode && mr.read_column >= 0 && mr.read_column < P)
          o << rect(left + mr.read_column * cell_w - 1, y - 2, cell_w, cell_h + 4, "none", "#d62728", 3);
      for (const ModeRow& mr : row.modes)
        if (mr.mode == mode)
          o << svg_text(left + P * cell_w + 14, y + cell_h * 0.65, shorten(departure_note(mr), 48), "",
                        std::string("font-size=\"13\" fill=\"") + (mr.matches_solo ? "#1a7f37" : "#b00020") + "\"");
    }
  }
  // Legend.
  const int ly = legend_y;
  o << svg_text(16, ly + 16, "legend", "", "font-size=\"14\" font-weight=\"bold\"");
  o << rect(90, ly + 2, 28, 20, "#e8f0fa", "#4a7fb5", 1) << svg_text(124, ly + 17, "real token (mask 1)", "", "font-size=\"13\"");
  o << rect(290, ly + 2, 28, 20, "#d9d9d9", "#999", 1, "stroke-dasharray=\"3,2\"")
    << svg_text(324, ly + 17, "PAD (mask 0: nobody attends to it)", "", "font-size=\"13\"");
  o << rect(600, ly + 2, 28, 20, "none", "#d62728", 3) << svg_text(634, ly + 17, "column the next token is read from", "", "font-size=\"13\"");
  o << svg_text(90, ly + 46, "green: the row's tokens and activations match its solo run; red: where it first departs (step, hook, position)",
                "", "font-size=\"13\"");
  o << svg_text(90, ly + 68, text ? "small digit in a cell: the padding mask (tokens.attention_mask) of that column"
                                  : std::to_string(P) + " columns: too narrow for their tokens, each drawn as a bar (blue: a real token, grey: PAD)",
                "", "font-size=\"12\" fill=\"#555\"");
  return svg_document(width, height, o.str());
}

}  // namespace lmscope
