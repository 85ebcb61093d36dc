// Base64 (RFC 4648, no line breaks) of bytes, by OpenSSL's EVP_EncodeBlock: how lmscope-report
// puts binary attention data into a script a page loads from disk (docs/report.md).
#pragma once
#include <cstddef>
#include <string>

namespace lmscope {

std::string base64_encode(const void* data, size_t n);

}  // namespace lmscope
