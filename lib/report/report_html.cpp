#include "report/report_html.h"

#include <stdexcept>

#include "io/sha256.h"

namespace lmscope {

namespace {

// Replaces the one `placeholder` of `text` (a template without it is a build defect).
std::string fill(const std::string& text, const std::string& placeholder, const std::string& with) {
  const size_t at = text.find(placeholder);
  if (at == std::string::npos) throw std::logic_error("report template has no " + placeholder);
  return text.substr(0, at) + with + text.substr(at + placeholder.size());
}

std::string cell_key(const AttentionPart& p) { return std::to_string(p.step) + "/" + std::to_string(p.layer); }

// The script that hands one step and layer to the page (a file of the folder, or inline).
std::string attention_script(const std::string& page_id, const AttentionPart& p) {
  return "lmscopeAttention(\"" + page_id + "\",\"" + cell_key(p) + "\",\"" + p.stored.base64 + "\");\n";
}

// Names this page's probabilities: a file of another report (another trace, or this page's
// folder rewritten) is told apart and refused by the page.
std::string page_id(const std::vector<AttentionPart>& attention) {
  std::string digests;
  for (const AttentionPart& p : attention) digests += cell_key(p) + ":" + sha256_bytes(p.stored.base64.data(), p.stored.base64.size()) + ";";
  return sha256_bytes(digests.data(), digests.size()).substr(0, 16);
}

// The JSON as a <script> element's text: "</" could end the element early (a prompt
// containing "</script>"); "<\/" is the same string in JSON.
std::string script_safe_json(const nlohmann::json& data) {
  // Invalid UTF-8 in a text (a prompt cut inside a character) becomes U+FFFD, not an exception.
  const std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && (json[i + 1] == '/' || json[i + 1] == '!')) {
      safe += "\\u003c";
      continue;
    }
    safe += json[i];
  }
  return safe;
}

}  // namespace

const std::string& report_template() {
  // report_template.inc: the HTML file as one raw string literal, made by CMake at configure
  // time (CMakeLists.txt, "report template").
  static const std::string t =
#include "report_template.inc"
      ;
  return t;
}

const std::string& attention_view_script() {
  static const std::string js =
#include "attention_view.inc"
      ;
  return js;
}

std::string report_html(const nlohmann::json& data) { return report_page(data, {}, AttentionStorage::Inline, "").html; }

ReportPage report_page(nlohmann::json data, const std::vector<AttentionPart>& attention, AttentionStorage storage,
                       const std::string& folder_name) {
  ReportPage page;
  for (const AttentionPart& p : attention) page.attention_bytes += int64_t(p.stored.base64.size());
  const bool in_files = storage == AttentionStorage::Files ||
                        (storage == AttentionStorage::Auto && page.attention_bytes > kInlineAttentionBytes);
  const std::string id = page_id(attention);
  std::string inline_scripts;
  nlohmann::json& a = data["attention"];
  if (!attention.empty()) {
    a["page_id"] = id;
    a["levels"] = kProbLevels;
    if (in_files) a["folder"] = folder_name;
  }
  for (const AttentionPart& p : attention) {
    if (!in_files) {
      inline_scripts += "<script>";   // appended: "<script>" + std::string trips GCC 12's bogus -Wrestrict
      inline_scripts += attention_script(id, p);
      inline_scripts += "</script>\n";
      continue;
    }
    std::string name = "s";   // "s0-l29.js"; appended: "s" + std::string trips GCC 12's bogus -Wrestrict
    name += std::to_string(p.step) + "-l" + std::to_string(p.layer) + ".js";
    a["cells"][cell_key(p)].push_back(name);
    page.files.push_back({name, attention_script(id, p)});
  }
  // The view first: the data that follows may hold any text (escaped: script_safe_json).
  const std::string with_view = fill(report_template(), "/*LMSCOPE_ATTENTION_VIEW*/", attention_view_script());
  page.html = fill(fill(with_view, "/*LMSCOPE_DATA*/", script_safe_json(data)), "<!--LMSCOPE_ATTENTION-->", inline_scripts);
  return page;
}

}  // namespace lmscope
