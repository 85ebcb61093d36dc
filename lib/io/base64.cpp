#include "io/base64.h"

#include <openssl/evp.h>

#include <climits>
#include <stdexcept>

namespace lmscope {

std::string base64_encode(const void* data, size_t n) {
  if (n > size_t(INT_MAX) / 4 * 3) throw std::length_error("base64_encode: more than 1.5 GiB in one block");
  std::string out(4 * ((n + 2) / 3) + 1, '\0');   // + the NUL EVP_EncodeBlock writes
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), static_cast<const unsigned char*>(data), int(n));
  out.resize(size_t(written));
  return out;
}

}  // namespace lmscope
