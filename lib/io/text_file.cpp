#include "io/text_file.h"
#include "io/output_target.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

namespace lmscope {

std::string temporary_beside(const std::string& path) {
  std::random_device rd;
  return path + ".partial." + std::to_string(::getpid()) + "." + std::to_string(rd() % 1000000);
}

void write_new_file(const std::string& file, const std::string& content, const std::string& shown) {
  auto fail = [&](const std::string& why) { throw std::runtime_error("cannot write '" + shown + "': " + why); };
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      ::unlink(file.c_str());
      fail(why);
    }
    p += n;
    left -= size_t(n);
  }
  const int synced = ::fsync(fd);
  const int sync_errno = errno;
  if (::close(fd) != 0 || synced != 0) {
    const std::string why = std::strerror(synced != 0 ? sync_errno : errno);
    ::unlink(file.c_str());
    fail(why);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  require_output_target(path);
  const FileSizeSignalIgnored xfsz;   // ulimit -f: EFBIG from write(), reported below
  const std::string tmp = temporary_beside(path);
  write_new_file(tmp, content, path);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + why);
  }
}

}  // namespace lmscope
