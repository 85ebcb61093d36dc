// Hook and step selection shared by the tools: `--hooks` globs (docs/hooks.md) and
// `--steps` / `--layers` integer ranges.
#pragma once
#include <string>
#include <vector>

namespace lmscope {

// `*` matches any run of characters (dots included), `?` exactly one character.
bool glob_match(const std::string& pattern, const std::string& text);
// True when `globs` is empty (no filter) or any glob matches.
bool match_any(const std::vector<std::string>& globs, const std::string& text);
// "a,b,,c" -> {"a","b","c"} (spaces around items trimmed).
std::vector<std::string> split_list(const std::string& csv);
// "0-3,7" -> {0,1,2,3,7}, sorted and unique; throws std::invalid_argument on bad text.
std::vector<int> parse_ranges(const std::string& text);

}  // namespace lmscope
