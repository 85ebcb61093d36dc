// Headless Chromium for the report tests: render a page or an SVG, read back its DOM or a
// screenshot. Debian's `chromium` (scripts/setup.sh installs it); LMSCOPE_CHROMIUM names
// another binary. A test that needs it fails, saying why, when no browser can be found or
// started: setup.sh installs it, so a missing one is a broken setup, not a reason to skip.
#pragma once
#include <png.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "tests/test_util.h"

namespace lmscope::testing_util {

// The browser's path, or "" with `why` set.
inline std::string find_chromium(std::string* why) {
  std::string candidates[] = {std::getenv("LMSCOPE_CHROMIUM") ? std::getenv("LMSCOPE_CHROMIUM") : "", "chromium",
                              "chromium-browser", "google-chrome"};
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    CliRun r = run_cli("timeout 60 " + c + " --headless --disable-gpu --no-sandbox --version");
    if (r.code == 0 && r.out.find("Chrom") != std::string::npos) return c;
  }
  *why = "no headless Chromium could be started (tried $LMSCOPE_CHROMIUM, chromium, chromium-browser, google-chrome; "
         "scripts/setup.sh installs Debian's chromium)";
  return "";
}

// Chromium's common flags: headless, no GPU, its own profile in `profile` (tests run in parallel).
inline std::string chromium_command(const std::string& chromium, const std::string& profile) {
  return "timeout 120 " + chromium + " --headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir=" +
         profile + " --virtual-time-budget=10000";
}

// The DOM after the page's scripts ran (`url` may carry a #fragment).
inline CliRun dump_dom(const std::string& chromium, const std::string& profile, const std::string& url) {
  return run_cli(chromium_command(chromium, profile) + " --dump-dom '" + url + "'");
}

// The DOM after the page's scripts ran in a window of width x height CSS px (what a projector shows).
inline CliRun dump_dom_at(const std::string& chromium, const std::string& profile, const std::string& url, int width, int height) {
  return run_cli(chromium_command(chromium, profile) + " --window-size=" + std::to_string(width) + "," + std::to_string(height) +
                 " --dump-dom '" + url + "'");
}

inline CliRun screenshot(const std::string& chromium, const std::string& profile, const std::string& url,
                         const std::string& png, int width, int height) {
  return run_cli(chromium_command(chromium, profile) + " --window-size=" + std::to_string(width) + "," +
                 std::to_string(height) + " --screenshot=" + png + " '" + url + "'");
}

struct PngStats {
  bool ok = false;
  std::string error;
  int width = 0, height = 0;
  double non_white = 0;       // fraction of pixels that are not (near) white
  size_t colours = 0;         // distinct colours (counted up to 4096)
};

// Reads a PNG with libpng (as 8-bit RGBA) and summarizes its pixels.
inline PngStats png_stats(const std::string& path) {
  PngStats s;
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) {
    s.error = img.message;
    return s;
  }
  img.format = PNG_FORMAT_RGBA;
  std::vector<unsigned char> px(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, px.data(), 0, nullptr)) {
    s.error = img.message;
    return s;
  }
  s.ok = true;
  s.width = int(img.width);
  s.height = int(img.height);
  size_t non_white = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 3 < px.size(); i += 4) {
    if (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240) ++non_white;
    if (colours.size() < 4096) colours.insert(uint32_t(px[i]) << 16 | uint32_t(px[i + 1]) << 8 | px[i + 2]);
  }
  s.non_white = double(non_white) / double(size_t(s.width) * size_t(s.height));
  s.colours = colours.size();
  return s;
}

// The value of attribute `attr` in the element whose id is `id`, from a serialized DOM; "" if absent.
inline std::string dom_attr(const std::string& dom, const std::string& id, const std::string& attr) {
  const size_t at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t open = dom.rfind('<', at), close = dom.find('>', at);
  const std::string tag = dom.substr(open, close - open);
  const size_t a = tag.find(" " + attr + "=\"");
  if (a == std::string::npos) return "";
  const size_t b = a + attr.size() + 3;
  return tag.substr(b, tag.find('"', b) - b);
}

// The text content of the element with id `id` (up to its first '<'), "" if absent.
inline std::string dom_text(const std::string& dom, const std::string& id) {
  const size_t at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t b = dom.find('>', at) + 1;
  return dom.substr(b, dom.find('<', b) - b);
}

}  // namespace lmscope::testing_util
