#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace lmscope {

namespace {

const char* kind_of(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "a special file";
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  throw std::runtime_error(path + ": is not a regular file (" + kind_of(st.st_mode) + ")");
}

std::string read_regular_file(const std::string& path, const std::string& label, size_t max_bytes) {
  const std::string where = label + " '" + path + "': ";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(where + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(where + "is " + kind_of(st.st_mode) + ", not a regular file");
  if (uint64_t(st.st_size) > max_bytes)
    throw std::runtime_error(where + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                             " this reads");
  // O_NONBLOCK: had the path become a FIFO since stat(), open() must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error(where + std::strerror(errno));
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
    ::close(fd);
    throw std::runtime_error(where + "is not a regular file");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(where + std::strerror(e));
    }
    if (n == 0) break;
    if (text.size() + size_t(n) > max_bytes) {   // grew since stat()
      ::close(fd);
      throw std::runtime_error(where + "more than the " + std::to_string(max_bytes) + " bytes this reads");
    }
    text.append(buf, size_t(n));
  }
  ::close(fd);
  return text;
}

}  // namespace lmscope
