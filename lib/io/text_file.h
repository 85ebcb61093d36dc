// Writes a whole text file (an HTML report, an SVG picture, a tokenizer.json, a JSON of
// figures) so that `path` holds either the complete new content or what it held before: the
// bytes go to a temporary beside it (`<path>.partial.<pid>.<random>`, created with O_EXCL),
// are fsync'ed, then renamed over it. Every tool writes its files through this (traces through
// TraceWriter; a page with its folder through io/page_folder.h): the same targets are refused
// (io/output_target.h: a FIFO, a device, a directory, a symlink) and a file-size limit is one
// line, not SIGXFSZ.
#pragma once
#include <string>

namespace lmscope {

// Throws std::runtime_error with one line, "cannot write '<path>': <reason>", after removing
// the temporary (a missing or read-only directory, a full disk, "File too large").
void write_file_atomic(const std::string& path, const std::string& content);

// The name of a temporary beside `path`: `<path>.partial.<pid>.<random>`.
std::string temporary_beside(const std::string& path);

// Creates `file` (it must not exist: O_EXCL), writes `content` and fsyncs it; on failure
// removes it and throws "cannot write '<shown>': <reason>". The caller keeps SIGXFSZ ignored
// (io/output_target.h) so that a file-size limit is an error here.
void write_new_file(const std::string& file, const std::string& content, const std::string& shown);

}  // namespace lmscope
