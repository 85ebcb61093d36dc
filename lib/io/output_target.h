// What every writer of a file (a trace, an HTML report, an SVG, a tokenizer.json, a JSON of
// figures) checks before it starts, and how it keeps a file-size limit from killing the
// process: one place, so that every tool refuses the same targets with the same words.
#pragma once
#include <string>

namespace lmscope {

// Why `path` cannot be an output, or "" when it looks writable: an empty path, a missing or
// unwritable directory, a directory, or an existing entry that is not a regular file (a FIFO,
// /dev/full, a socket) or is a symbolic link. Writers rename a finished temporary over the
// path; as root that would replace a device node, and over a symlink it would replace the
// link (not its target) without a word, so neither is replaced.
std::string output_target_problem(const std::string& path);
// Throws std::runtime_error("cannot write '<path>': <why>") for such a target. Tools call it
// before a long run (so a bad --svg fails at once), and write_file_atomic calls it again.
void require_output_target(const std::string& path);

// While one is alive, SIGXFSZ is ignored (when it was at its default action), so a file-size
// limit (ulimit -f) fails the write with EFBIG, which the writer reports in one line, instead
// of killing the process. Nested and concurrent guards share one saved action.
class FileSizeSignalIgnored {
 public:
  FileSizeSignalIgnored();
  ~FileSizeSignalIgnored();
  FileSizeSignalIgnored(const FileSizeSignalIgnored&) = delete;
  FileSizeSignalIgnored& operator=(const FileSizeSignalIgnored&) = delete;
};

}  // namespace lmscope
