#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "io/regular_file.h"

namespace lmscope {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  require_regular_file(path);   // before open(): a FIFO would block it
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": is not a regular file");
  }
  size_ = size_t(st.st_size);
  // mmap of length 0 fails with EINVAL; an empty file is simply an empty mapping.
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot mmap: " + std::strerror(e));
    }
    data_ = static_cast<uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid after the descriptor is closed
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace lmscope
