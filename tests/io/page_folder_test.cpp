// write_page_with_folder (io/page_folder.h) as the probe used it: two writers of one page at
// once, and an old folder of ours made read-only.
#include <gtest/gtest.h>
#include <sys/wait.h>
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

// The second write, whose old folder is read-only, as a user who is not root: root ignores a
// folder's permissions, so under root (CI) it runs in a child that gives them up (nobody).
bool replaces_read_only_folder(const std::string& dir) {
  write(dir, "A");
  fs::permissions(dir + "/page.html.d", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  write(dir, "B");
  bool clean = read(dir + "/page.html.d/who.txt") == "B";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial.") != std::string::npos) clean = false;
  return clean;
}

TEST(PageFolder, AReadOnlyOldFolderOfOursIsReplacedWithoutLeftovers) {
  testing_util::TempDir tmp;
  const std::string dir = tmp.path().string();
  if (::geteuid() != 0) {
    EXPECT_TRUE(replaces_read_only_folder(dir)) << "the old folder was left as *.partial.*";
    return;
  }
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool dropped = ::setgid(kNobody) == 0 && ::setuid(kNobody) == 0 && ::geteuid() == kNobody;
    ::_exit(!dropped ? 2 : replaces_read_only_folder(dir) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "could not become nobody (uid 65534)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the old folder was left as *.partial.*";
}
