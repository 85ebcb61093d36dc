// Model, tokenizer and config inputs are read whole. A FIFO would block the read forever and
// a device (/dev/zero) would fill memory, so every input file is checked with stat() (which,
// unlike open(), never blocks on a FIFO) before it is opened.
#pragma once
#include <string>

namespace lmscope {

// Throws std::runtime_error("<path>: is not a regular file (a FIFO)") when `path` exists and
// is not a regular file (or a symlink to one). A missing path passes: the caller's own open
// reports it.
void require_regular_file(const std::string& path);

}  // namespace lmscope
