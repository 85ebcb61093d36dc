#include "experiments/cache_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/svg.h"

namespace lmscope {

namespace {

// Axis numbers: whole numbers as such (1500, not 1.5e+03), others with 3 significant digits.
std::string num(double v) {
  char buf[32];
  if (std::fabs(v) >= 1 && std::fabs(v) < 1e9 && v == std::round(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// A "nice" axis maximum >= v: 1, 2 or 5 times a power of ten.
double nice_max(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * p >= v) return f * p;
  return 10 * p;
}

// An axis maximum >= v for counts: 4 ticks of a whole step of 1, 2 or 5 times a power of ten,
// so that every tick is a whole number of tokens.
double count_max(double v) {
  double step = 1;
  while (4 * step < v) {
    const double p = std::pow(10.0, std::floor(std::log10(step)));
    step = step < 2 * p ? 2 * p : step < 5 * p ? 5 * p : 10 * p;
  }
  return 4 * step;
}

struct Axes {
  double x0, y0, w, h;   // plot area: left, top, width, height
  double ymax;
};

std::string frame(const Axes& a, const std::string& title, const std::string& xlabel, const std::string& ylabel) {
  std::ostringstream o;
  o << svg_text(a.x0, a.y0 - 16, title, "", "font-size=\"16\" font-weight=\"bold\"");
  o << "<line x1=\"" << a.x0 << "\" y1=\"" << a.y0 + a.h << "\" x2=\"" << a.x0 + a.w << "\" y2=\"" << a.y0 + a.h
    << "\" stroke=\"#333\"/>\n<line x1=\"" << a.x0 << "\" y1=\"" << a.y0 << "\" x2=\"" << a.x0 << "\" y2=\"" << a.y0 + a.h
    << "\" stroke=\"#333\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = a.ymax * i / 4, y = a.y0 + a.h - a.h * i / 4;
    o << "<line x1=\"" << a.x0 - 4 << "\" y1=\"" << y << "\" x2=\"" << a.x0 + a.w << "\" y2=\"" << y
      << "\" stroke=\"#e5e5e5\"/>\n";
    o << svg_text(a.x0 - 8, y + 4, num(v), "end", "font-size=\"12\"");
  }
  o << svg_text(a.x0 + a.w / 2, a.y0 + a.h + 42, xlabel, "middle", "font-size=\"14\"");
  std::ostringstream rot;
  const double ym = a.y0 + a.h / 2, xl = a.x0 - 62;
  rot << "font-size=\"14\" transform=\"rotate(-90 " << xl << " " << ym << ")\"";
  o << svg_text(xl, ym, ylabel, "middle", rot.str());
  return o.str();
}

std::string bar(double x, double y, double w, double h, const std::string& fill, const std::string& tip) {
  std::ostringstream o;
  o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill << "\"><title>"
    << xml_escape(tip) << "</title></rect>\n";
  return o.str();
}

}  // namespace

std::string cache_svg(const CacheReport& r) {
  const int n = int(r.per_step.size());
  const char* kCached = "#4a7fb5";
  const char* kUncached = "#f0a040";
  std::ostringstream o;
  o << svg_text(16, 32, "KV cache: the work per step, and the memory it costs", "", "font-size=\"22\" font-weight=\"bold\"");
  o << svg_text(16, 56, "B = " + std::to_string(r.batch) + " row(s), prompt of " + std::to_string(r.prompt_len) + " tokens, " +
                            std::to_string(n) + " steps (step 0 = prefill); " +
                            (r.fault == CacheFault::None ? std::string("no fault planted") : "fault planted: " + std::string(cache_fault_name(r.fault))),
                "", "font-size=\"14\" fill=\"#333\"");
  // Left: tokens pushed through the model at each step.
  double tmax = 1;
  for (const CacheStep& s : r.per_step) tmax = std::max({tmax, double(s.T_cached * r.batch), double(s.T_uncached * r.batch)});
  const Axes a{100, 110, 500, 440, count_max(tmax)};
  o << frame(a, "Tokens pushed through the model, per step", "step", "tokens processed (count)");
  const double slot = a.w / std::max(n, 1), bw = std::max(2.0, slot * 0.4);
  for (int i = 0; i < n; ++i) {
    const CacheStep& s = r.per_step[size_t(i)];
    const double x = a.x0 + i * slot + slot * 0.1;
    const double hc = a.h * double(s.T_cached * r.batch) / a.ymax, hu = a.h * double(s.T_uncached * r.batch) / a.ymax;
    o << bar(x, a.y0 + a.h - hu, bw, hu, kUncached, "step " + std::to_string(s.step) + " without cache: " + std::to_string(s.T_uncached * r.batch) + " tokens");
    o << bar(x + bw, a.y0 + a.h - hc, bw, hc, kCached, "step " + std::to_string(s.step) + " with cache: " + std::to_string(s.T_cached * r.batch) + " tokens");
    if (n <= 16 || i % ((n + 15) / 16) == 0) o << svg_text(x + bw, a.y0 + a.h + 16, std::to_string(s.step), "middle", "font-size=\"12\"");
  }
  // Right: the KV cache's bytes once the step has run (S positions held).
  double kmax = 0;
  for (const CacheStep& s : r.per_step) kmax = std::max(kmax, double(s.S) * double(r.kv_bytes_per_position) / 1024.0);
  const Axes b{780, 110, 440, 440, nice_max(kmax)};
  o << frame(b, "KV cache size as the sequence grows", "sequence length (positions in the cache)", "KV cache (KiB)");
  int64_t smax = 1;
  for (const CacheStep& s : r.per_step) smax = std::max(smax, s.S);
  std::ostringstream pts;
  for (const CacheStep& s : r.per_step) {
    const double x = b.x0 + b.w * double(s.S) / double(smax), y = b.y0 + b.h - b.h * (double(s.S) * double(r.kv_bytes_per_position) / 1024.0) / b.ymax;
    pts << x << "," << y << " ";
    o << "<circle cx=\"" << x << "\" cy=\"" << y << "\" r=\"3\" fill=\"" << kCached << "\"/>\n";
  }
  o << "<polyline points=\"" << pts.str() << "\" fill=\"none\" stroke=\"" << kCached << "\" stroke-width=\"2\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = double(smax) * i / 4;
    o << svg_text(b.x0 + b.w * i / 4, b.y0 + b.h + 16, num(std::round(v)), "middle", "font-size=\"12\"");
  }
  // The formula in two lines at the plot's top left, which the line reaches only at its right end.
  o << svg_text(b.x0 + 10, b.y0 + 16, num(double(r.kv_bytes_per_position)) + " bytes per position =", "", "font-size=\"12\" fill=\"#333\"");
  o << svg_text(b.x0 + 10, b.y0 + 32, "2 (K and V) x layers x B x KV heads x head dim x 4 bytes", "", "font-size=\"12\" fill=\"#333\"");
  // The fault: where the cached run first departs.
  if (r.detected && r.detected->step >= 0) {
    const double x = a.x0 + r.detected->step * slot + slot * 0.1 + bw;
    o << "<line x1=\"" << x << "\" y1=\"" << a.y0 << "\" x2=\"" << x << "\" y2=\"" << a.y0 + a.h
      << "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n";
    std::string what = "first divergence: step " + std::to_string(r.detected->step);
    if (r.detected->layer >= 0) what += ", layer " + std::to_string(r.detected->layer);
    what += " (" + (r.detected->layer_hook.empty() ? r.detected->hook : r.detected->layer_hook) + ")";
    o << svg_text(std::min(x + 6, a.x0 + a.w - 10), a.y0 + 14, what, x > a.x0 + a.w / 2 ? "end" : "", "font-size=\"13\" fill=\"#d62728\"");
  }
  // Legend and the totals.
  const int ly = 640;
  o << bar(100, ly, 20, 14, kCached, "") << svg_text(126, ly + 12, "with the KV cache (one new token per step)", "", "font-size=\"13\"");
  o << bar(430, ly, 20, 14, kUncached, "") << svg_text(456, ly + 12, "without (the whole sequence again)", "", "font-size=\"13\"");
  if (r.fault != CacheFault::None)
    o << "<line x1=\"740\" y1=\"" << ly + 7 << "\" x2=\"770\" y2=\"" << ly + 7 << "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n"
      << svg_text(776, ly + 12, "first step where the cached run departs", "", "font-size=\"13\"");
  std::string totals = "total: " + std::to_string(r.tokens_cached_processed) + " tokens with the cache, " +
                       std::to_string(r.tokens_uncached_processed) + " without";
  if (r.seconds_cached > 0 || r.seconds_uncached > 0)
    totals += "; time of the whole run: " + num(r.seconds_cached) + " s with, " + num(r.seconds_uncached) + " s without";
  o << svg_text(100, ly + 40, totals, "", "font-size=\"13\" fill=\"#333\"");
  return svg_document(1280, 720, o.str());
}

}  // namespace lmscope
