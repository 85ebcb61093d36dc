// The report page: lib/report/report_template.html (compiled in) with the data of
// report/report_data.h as an inline JSON blob, and the heatmaps' probabilities
// (report/attention_store.h) either inline in the page or as one script file per step and
// layer in a folder beside it, loaded when the reader picks that step and layer
// (docs/report.md, "Size").
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/page_folder.h"
#include "report/report_data.h"

namespace lmscope {

enum class AttentionStorage { Auto, Inline, Files };

// Auto keeps the probabilities inline up to this many bytes (base64) in all, else in files.
constexpr int64_t kInlineAttentionBytes = int64_t(1) << 20;

struct ReportPage {
  std::string html;
  std::vector<FolderFile> files;   // the folder's files; empty when inline
  int64_t attention_bytes = 0;     // the probabilities' bytes, inline or in files
};

// folder_name: the folder's name as the page refers to it (beside the page: "report.html.d").
ReportPage report_page(nlohmann::json data, const std::vector<AttentionPart>& attention, AttentionStorage storage,
                       const std::string& folder_name);

// The page alone (no heatmap probabilities): for tests of what the template does.
std::string report_html(const nlohmann::json& data);

// The template itself (for tests that check what it contains).
const std::string& report_template();

// lib/report/attention_view.js (compiled in): the heatmap view of one head that the page draws
// its Attention section with and lmscope.attention_view puts into a notebook's cell.
const std::string& attention_view_script();

}  // namespace lmscope
