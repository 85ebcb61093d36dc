// write_page_with_folder (io/page_folder.h) as the probe used it: two writers of one page at
// once, and an old folder of ours made read-only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "io/page_folder.h"
#include "tests/test_util.h"

using namespace lmscope;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const std::string& dir, const std::string& who) {
  // A folder of many files, so that the two writers overlap.
  std::vector<FolderFile> files;
  for (int i = 0; i < 40; ++i) files.push_back({"part" + std::to_string(i) + ".js", who + std::string(20000, 'x')});
  files.push_back({"who.txt", who});
  write_page_with_folder(dir + "/page.html", "page of " + who, dir + "/page.html.d", "test folder\n", files);
}

}  // namespace

TEST(PageFolder, TwoWritersAtOnceLeaveAPageAndItsOwnFolder) {
  testing_util::TempDir tmp;
  const std::string dir = tmp.path().string();
  for (int round = 0; round < 20; ++round) {
    std::thread a([&] { write(dir, "A"); });
    std::thread b([&] { write(dir, "B"); });
    a.join();
    b.join();
    const std::string page = read(dir + "/page.html"), who = read(dir + "/page.html.d/who.txt");
    ASSERT_EQ(page, "page of " + who) << "round " << round << ": the page of one writer beside the folder of the other";
  }
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".partial."), std::string::npos) << e.path();
}

TEST(PageFolder, AReadOnlyOldFolderOfOursIsReplacedWithoutLeftovers) {
  // Root removes files from a read-only folder anyway: only another user sees the leftover.
  if (::geteuid() == 0) GTEST_SKIP() << "runs as root, which ignores a folder's permissions";
  testing_util::TempDir tmp;
  const std::string dir = tmp.path().string();
  write(dir, "A");
  fs::permissions(dir + "/page.html.d", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  write(dir, "B");
  EXPECT_EQ(read(dir + "/page.html.d/who.txt"), "B");
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".partial."), std::string::npos) << e.path() << " left behind";
}
