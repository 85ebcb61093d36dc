// A page and the folder of files it loads (lmscope-report's attention data: docs/report.md),
// written so that the two hold the new content together, or what they held before: the files
// go to a temporary folder beside the target (`<folder>.partial.<pid>.<random>`), each
// fsync'ed; the folder is swapped in (renameat2 RENAME_EXCHANGE, or a rename when there was
// none); then the page is written by io/text_file.h. When the page cannot be written, the old
// folder is swapped back. A failure leaves no temporary, no half-written file and no folder
// that does not match its page.
//
// A folder this writes holds the file kFolderMarker. An existing folder without it (the
// user's) is refused, never replaced or removed; so is a symlink or a file at its path.
#pragma once
#include <string>
#include <vector>

namespace lmscope {

constexpr const char* kFolderMarker = ".lmscope-folder";

struct FolderFile {
  std::string name;      // a plain file name, no '/'
  std::string content;
};

// Throws "cannot write '<folder>': <why>" unless `folder` is absent or a folder of ours
// (writers check before a long run; write_page_with_folder checks again).
void require_folder_target(const std::string& folder);

// Throws std::runtime_error with one line, "cannot write '<page or folder or file>': <why>".
// `about`: the marker's text (what the folder is, which page loads it). With no files, the
// page alone is written and a folder of ours at `folder` (from an earlier run) is removed.
void write_page_with_folder(const std::string& page_path, const std::string& page, const std::string& folder,
                            const std::string& about, const std::vector<FolderFile>& files);

}  // namespace lmscope
