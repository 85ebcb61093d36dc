// Input files are read whole. A FIFO would block the read forever and a device (/dev/zero)
// would fill memory, so every input file is checked with stat() (which, unlike open(), never
// blocks on a FIFO) before it is opened: model, tokenizer and config files, and every text
// file a tool takes as an option (--file, --train, --chat-json, --text-file, --tolerances...).
#pragma once
#include <cstddef>
#include <string>

namespace lmscope {

// Throws std::runtime_error("<path>: is not a regular file (a FIFO)") when `path` exists and
// is not a regular file (or a symlink to one). A missing path passes: the caller's own open
// reports it.
void require_regular_file(const std::string& path);

// What a text option may name: 64 MiB, far above any prompt, corpus or template these tools
// are for, and far below what would exhaust memory once parsed or tokenized.
constexpr size_t kMaxTextFileBytes = size_t(64) << 20;

// The whole of a regular file, at most `max_bytes` long. Throws one line that starts with
// `label` (the option, "--train") and names the file:
//   "--train 'corpus': No such file or directory"
//   "--file 'dir': is a directory, not a regular file"
//   "--train 'big.txt': 70000000 bytes, more than the 67108864 this reads"
std::string read_regular_file(const std::string& path, const std::string& label,
                              size_t max_bytes = kMaxTextFileBytes);

}  // namespace lmscope
