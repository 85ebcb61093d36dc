#include "io/regular_file.h"

#include <sys/stat.h>

#include <stdexcept>

namespace lmscope {

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "a special file";
  throw std::runtime_error(path + ": is not a regular file (" + kind + ")");
}

}  // namespace lmscope
