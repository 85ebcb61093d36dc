// The layout check of a picture: every <text> of an SVG, as headless Chromium lays it out,
// must stay inside the picture and overlap no other text. Each text's box is getBBox() (its
// glyph box in its own coordinates) carried through getCTM(), so a rotated label is checked as
// the rotated rectangle it is, not as the larger axis-aligned box around it; two boxes overlap
// when no edge direction of either separates them (separating axis test), by more than
// kOverlapSlackPx (a line box includes the font's leading: text set a line apart may touch).
// A filled shape painted after a text (later in the document) and over it hides it: reported too.
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "tests/report/browser.h"
#include "tests/test_util.h"

namespace lmscope::testing_util {

constexpr double kOverlapSlackPx = 1.0;

// The script run in the page: writes {"texts": n, "problems": [...]} into <script id="layout">.
// '<' is escaped in the JSON so that a label cannot end the script element.
inline const char* layout_script() {
  return R"JS(
(function () {
  const SLACK = %SLACK%;
  const svg = document.querySelector('svg');
  const vb = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width ? svg.viewBox.baseVal : null;
  const W = vb ? vb.width : svg.width.baseVal.value, H = vb ? vb.height : svg.height.baseVal.value;
  function quad(e) {
    const b = e.getBBox(), m = e.getCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  }
  // Texts, and the filled shapes painted after each (a shape painted later hides the text).
  const items = [], shapes = [];
  let order = 0;
  for (const e of svg.querySelectorAll('*')) {
    ++order;
    if (e.tagName === 'text') {
      if (e.textContent.trim()) items.push({text: e.textContent, pts: quad(e), order});
    } else if (['rect', 'circle', 'ellipse', 'polygon'].includes(e.tagName)) {
      const fill = getComputedStyle(e).fill;
      if (fill !== 'none' && fill !== 'transparent' && fill !== 'rgba(0, 0, 0, 0)')
        shapes.push({tag: e.tagName, pts: quad(e), order});
    }
  }
  // Depth of overlap of two convex quads: the smallest overlap of their projections over the
  // edge normals of both (<= 0: separated).
  function depth(p, q) {
    let best = Infinity;
    for (const poly of [p, q]) for (let i = 0; i < 4; ++i) {
      const a = poly[i], b = poly[(i + 1) % 4];
      let nx = a[1] - b[1], ny = b[0] - a[0];
      const len = Math.hypot(nx, ny);
      if (len === 0) continue;
      nx /= len; ny /= len;
      const pr = (s) => s.map(([x, y]) => x * nx + y * ny);
      const u = pr(p), v = pr(q);
      best = Math.min(best, Math.min(Math.max(...u), Math.max(...v)) - Math.max(Math.min(...u), Math.min(...v)));
    }
    return best;
  }
  const problems = [];
  const r1 = (v) => Math.round(v * 10) / 10;
  for (const it of items) {
    const xs = it.pts.map(p => p[0]), ys = it.pts.map(p => p[1]);
    const out = Math.max(-Math.min(...xs), Math.max(...xs) - W, -Math.min(...ys), Math.max(...ys) - H);
    if (out > SLACK) problems.push('outside the ' + W + 'x' + H + ' picture by ' + r1(out) + ' px: "' + it.text + '"');
  }
  for (let i = 0; i < items.length; ++i) for (let j = i + 1; j < items.length; ++j) {
    const d = depth(items[i].pts, items[j].pts);
    if (d > SLACK) problems.push('overlap of ' + r1(d) + ' px: "' + items[i].text + '" and "' + items[j].text + '"');
  }
  for (const it of items) for (const sh of shapes) {
    if (sh.order < it.order) continue;
    const d = depth(it.pts, sh.pts);
    if (d > SLACK) { problems.push('hidden by a ' + sh.tag + ' painted over it (' + r1(d) + ' px): "' + it.text + '"'); break; }
  }
  const s = document.createElement('script');
  s.id = 'layout';
  s.type = 'application/json';
  s.textContent = JSON.stringify({texts: items.length, width: W, height: H, problems}).replace(/</g, '\\u003c');
  document.body.appendChild(s);
})();
)JS";
}

struct LayoutResult {
  bool ran = false;                   // the page produced its result
  std::string error;                  // why not
  int texts = 0;                      // text elements checked
  double width = 0, height = 0;       // the picture's size as the browser read it
  std::vector<std::string> problems;  // one line per text outside the picture or per overlapping pair
};

// Renders `svg` (the file's text) inline in an HTML page in headless Chromium and checks it.
inline LayoutResult check_svg_layout(const std::string& chromium, const TempDir& dir, const std::string& name,
                                     const std::string& svg) {
  LayoutResult r;
  std::string script = layout_script();
  script.replace(script.find("%SLACK%"), 7, std::to_string(kOverlapSlackPx));
  const std::string page = dir.file(name + ".layout.html");
  {
    std::ofstream f(page);
    f << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{margin:0}</style></head><body>\n"
      << svg << "\n<script>" << script << "</script></body></html>\n";
  }
  CliRun dom = dump_dom(chromium, dir.file("profile-layout"), "file://" + page);
  if (dom.code != 0) {
    r.error = "chromium failed: " + dom.err;
    return r;
  }
  const size_t at = dom.out.find("id=\"layout\"");
  if (at == std::string::npos || dom.out.find('>', at) == std::string::npos) {
    r.error = "the layout script wrote no result (a script error?)";
    return r;
  }
  const size_t b = dom.out.find('>', at) + 1;
  const nlohmann::json j = nlohmann::json::parse(dom.out.substr(b, dom.out.find("</script>", b) - b));
  r.ran = true;
  r.texts = j["texts"];
  r.width = j["width"];
  r.height = j["height"];
  for (const auto& p : j["problems"]) r.problems.push_back(p.get<std::string>());
  return r;
}

}  // namespace lmscope::testing_util
