// SHA-256 of a file (OpenSSL's EVP digest), as lowercase hex: how a trace names the files a
// run read (an intervention's source trace, a steering vector).
#pragma once
#include <cstddef>
#include <string>

namespace lmscope {

// Throws std::runtime_error("cannot read '<path>': <reason>").
std::string sha256_file(const std::string& path);

// Of bytes in memory (values given to an intervention without a file).
std::string sha256_bytes(const void* data, size_t n);

}  // namespace lmscope
