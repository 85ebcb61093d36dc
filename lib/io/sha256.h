// SHA-256 of a file (OpenSSL's EVP digest), as lowercase hex: how a trace names the files a
// run read (an intervention's source trace, a steering vector).
#pragma once
#include <string>

namespace lmscope {

// Throws std::runtime_error("cannot read '<path>': <reason>").
std::string sha256_file(const std::string& path);

}  // namespace lmscope
