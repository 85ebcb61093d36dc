// Writes a whole text file (an HTML report, an SVG picture) so that `path` holds either the
// complete new content or what it held before: the bytes go to a temporary beside it
// (`<path>.partial.<pid>.<random>`, created with O_EXCL), are fsync'ed, then renamed over it.
#pragma once
#include <string>

namespace lmscope {

// Throws std::runtime_error with one line, "cannot write '<path>': <reason>", after removing
// the temporary (a missing or read-only directory, a full disk).
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace lmscope
