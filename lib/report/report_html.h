// The report page: lib/report/report_template.html (compiled in) with the data of
// report/report_data.h as an inline JSON blob.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace lmscope {

std::string report_html(const nlohmann::json& data);

// The template itself (for tests that check what it contains).
const std::string& report_template();

}  // namespace lmscope
