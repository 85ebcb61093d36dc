// Small pieces every hand-written SVG picture shares (report heatmaps, the padding and cache
// pictures): XML escaping, a colour scale and the document frame. No dependency: an SVG is text.
#pragma once
#include <string>
#include <vector>

namespace lmscope {

// XML-escapes text (&, <, >, ", '); control characters become spaces (not allowed in XML 1.0).
std::string xml_escape(const std::string& s);

// A probability (0..1, clamped) as a colour from white to dark blue: "#rrggbb".
std::string probability_colour(double p);
// A signed value (-1..1, clamped) on a diverging scale: dark red at -1, white at 0, dark blue
// at 1 (probability_colour's blue), so that a negative value is as visible as a positive one.
std::string signed_colour(double v);

// Wraps `body` in an <svg> of the given size with a white background; font sizes in the body
// are relative to `font_size` px. Readable at 1280x720 when width <= ~1280.
std::string svg_document(int width, int height, const std::string& body, int font_size = 14);

// "<text x=.. y=.. [text-anchor] [extra]>escaped</text>\n"
std::string svg_text(double x, double y, const std::string& text, const std::string& anchor = "",
                     const std::string& extra = "");

// A string cut to `n` characters (UTF-8 aware) with an ellipsis.
std::string shorten(const std::string& s, size_t n);

// Layout needs text widths before a browser measures them: an upper estimate in px of `s` at
// `font_px`. `em_per_char` is the width of an ASCII character in em (DejaVu Sans Mono: 0.602;
// DejaVu Sans averages below 0.62 for text, bold below 0.7); any other character counts 1 em.
double text_width(const std::string& s, double font_px, double em_per_char = 0.62);

// Words of `s` in lines of at most `max_px` at `font_px` (a word longer than a line keeps its line).
std::vector<std::string> wrap_text(const std::string& s, double max_px, double font_px);

}  // namespace lmscope
