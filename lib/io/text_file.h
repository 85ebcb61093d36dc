// Writes a whole text file (an HTML report, an SVG picture, a tokenizer.json, a JSON of
// figures) so that `path` holds either the complete new content or what it held before: the
// bytes go to a temporary beside it (`<path>.partial.<pid>.<random>`, created with O_EXCL),
// are fsync'ed, then renamed over it. Every tool writes its files through this (traces through
// TraceWriter): the same targets are refused (io/output_target.h: a FIFO, a device, a
// directory, a symlink) and a file-size limit is one line, not SIGXFSZ.
#pragma once
#include <string>

namespace lmscope {

// Throws std::runtime_error with one line, "cannot write '<path>': <reason>", after removing
// the temporary (a missing or read-only directory, a full disk, "File too large").
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace lmscope
