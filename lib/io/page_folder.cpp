#include "io/page_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/output_target.h"
#include "io/text_file.h"

namespace lmscope {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write '" + path + "': " + why);
}

// Whether a folder of ours is at `folder` (false: nothing there); throws for anything else.
bool existing_folder_of_ours(const std::string& folder) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) fail(folder, "it is a symbolic link; not replacing it");
  if (!S_ISDIR(st.st_mode)) fail(folder, "it exists and is not a folder; not replacing it");
  std::error_code ec;
  if (!fs::exists(fs::path(folder) / kFolderMarker, ec))
    fail(folder, std::string("it exists and was not written by lmscope (no ") + kFolderMarker + " in it); not replacing it");
  return true;
}

// Swaps two paths (both exist) in one step.
bool exchange(const std::string& a, const std::string& b) {
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
}

void fsync_folder(const std::string& dir, const std::string& shown) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(shown, std::strerror(errno));
  const int synced = ::fsync(fd);
  const int why = errno;
  ::close(fd);
  if (synced != 0) fail(shown, std::strerror(why));
}

}  // namespace

void require_folder_target(const std::string& folder) { existing_folder_of_ours(folder); }

void write_page_with_folder(const std::string& page_path, const std::string& page, const std::string& folder,
                            const std::string& about, const std::vector<FolderFile>& files) {
  require_output_target(page_path);
  const bool had_folder = existing_folder_of_ours(folder);
  std::error_code ec;
  if (files.empty()) {
    write_file_atomic(page_path, page);
    if (had_folder) fs::remove_all(folder, ec);   // an earlier run's: this page does not load it
    return;
  }
  const FileSizeSignalIgnored xfsz;   // ulimit -f: EFBIG from write(), one line
  const std::string tmp = temporary_beside(folder);
  if (::mkdir(tmp.c_str(), 0755) != 0) fail(folder, std::strerror(errno));
  try {
    write_new_file(tmp + "/" + kFolderMarker, about, folder + "/" + kFolderMarker);
    for (const FolderFile& f : files) {
      if (f.name.empty() || f.name.find('/') != std::string::npos || f.name[0] == '.')
        throw std::logic_error("write_page_with_folder: bad file name '" + f.name + "'");
      write_new_file(tmp + "/" + f.name, f.content, folder + "/" + f.name);
    }
    fsync_folder(tmp, folder);
    if (had_folder ? !exchange(tmp, folder) : std::rename(tmp.c_str(), folder.c_str()) != 0) fail(folder, std::strerror(errno));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // The new folder is in place; `tmp` holds the old one (if any) until the page is written.
  try {
    write_file_atomic(page_path, page);
  } catch (...) {
    if (had_folder && exchange(tmp, folder)) fs::remove_all(tmp, ec);   // the old folder back
    else if (!had_folder) fs::remove_all(folder, ec);
    throw;
  }
  if (had_folder) fs::remove_all(tmp, ec);
}

}  // namespace lmscope
