#include "io/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace lmscope {

namespace {

using DigestCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestCtx sha256_begin() {
  DigestCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || !EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr)) throw std::runtime_error("sha256: OpenSSL init failed");
  return ctx;
}

std::string sha256_hex(EVP_MD_CTX* ctx) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, md, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  DigestCtx ctx = sha256_begin();
  std::vector<char> buf(size_t(1) << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    if (f.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), size_t(f.gcount()));
  }
  if (f.bad()) throw std::runtime_error("cannot read '" + path + "': read error");
  return sha256_hex(ctx.get());
}

std::string sha256_bytes(const void* data, size_t n) {
  DigestCtx ctx = sha256_begin();
  EVP_DigestUpdate(ctx.get(), data, n);
  return sha256_hex(ctx.get());
}

}  // namespace lmscope
