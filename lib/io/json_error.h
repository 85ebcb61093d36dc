// Helpers that turn JSON values and nlohmann exceptions into short one-line message text,
// shared by the safetensors header checks and the config.json checks.
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace lmscope {

// "string", "integer", "float", "boolean", "null", "array" or "object".
std::string json_kind(const nlohmann::json& v);
// The value as compact JSON, cut to about 60 characters.
std::string json_short(const nlohmann::json& v);
// An nlohmann exception's text without its "[json.exception.parse_error.101] " prefix,
// with any line breaks flattened so the whole error stays one line.
std::string json_error_text(const std::exception& e);
// `s` with line breaks turned into spaces: every lmscope error is a single line, even when
// it quotes a tensor name or JSON key that holds a newline.
std::string one_line(std::string s);
// Throws std::runtime_error("<path>: <msg>") as one line: a file's reader naming the file.
[[noreturn]] void fail_file(const std::string& path, const std::string& msg);

}  // namespace lmscope
