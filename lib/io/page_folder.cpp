#include "io/page_folder.h"

#include <fcntl.h>
#include <sys/file.h>
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

// Removes a folder of ours that was swapped out. Its files can be unlinked only when the folder
// itself is writable: an old folder made read-only (chmod a-w) would otherwise stay behind as
// `<folder>.partial.*` after a successful run.
void remove_old_folder(const std::string& dir) {
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(dir, ec);
}

// Two writers of one page at once (two lmscope-report runs): each swaps its folder in and then
// writes its page, so without an order the page of one could end beside the folder of the
// other. An exclusive lock on the page's directory, held from the folder check to the page
// write, puts them one after the other.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& page_path) {
    const fs::path parent = fs::path(page_path).parent_path();
    fd_ = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);   // no lock (a folder we cannot open): the rename's own checks remain
  }
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);   // closing releases the lock
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

void require_folder_target(const std::string& folder) { existing_folder_of_ours(folder); }

void write_page_with_folder(const std::string& page_path, const std::string& page, const std::string& folder,
                            const std::string& about, const std::vector<FolderFile>& files) {
  require_output_target(page_path);
  const DirectoryLock one_writer(page_path);
  const bool had_folder = existing_folder_of_ours(folder);
  std::error_code ec;
  if (files.empty()) {
    write_file_atomic(page_path, page);
    if (had_folder) remove_old_folder(folder);   // an earlier run's: this page does not load it
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
    if (had_folder && exchange(tmp, folder)) remove_old_folder(tmp);   // the old folder back
    else if (!had_folder) fs::remove_all(folder, ec);
    throw;
  }
  if (had_folder) remove_old_folder(tmp);
}

}  // namespace lmscope
