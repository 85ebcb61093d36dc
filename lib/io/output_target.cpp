#include "io/output_target.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace lmscope {

namespace fs = std::filesystem;

namespace {

// 'text', built by appending: `"'" + std::string` trips GCC 12's bogus -Wrestrict.
std::string in_quotes(const std::string& text) {
  std::string q = "'";
  q += text;
  q += '\'';
  return q;
}

std::mutex g_xfsz_mu;
int g_xfsz_users = 0;
bool g_xfsz_ignoring = false;
struct sigaction g_xfsz_old;

}  // namespace

std::string output_target_problem(const std::string& path) {
  if (path.empty()) return "empty path";
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "directory " + in_quotes(dir.string()) + " does not exist";
  if (!fs::is_directory(dir, ec)) return in_quotes(dir.string()) + " is not a directory";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "it is a directory";
    if (S_ISLNK(st.st_mode)) return "it is a symbolic link; not replacing it";
    if (!S_ISREG(st.st_mode)) return "it exists and is not a regular file; not replacing it";
  }
  if (::access(dir.c_str(), W_OK) != 0)
    return "directory " + in_quotes(dir.string()) + " is not writable (" + std::strerror(errno) + ")";
  return "";
}

void require_output_target(const std::string& path) {
  if (std::string why = output_target_problem(path); !why.empty())
    throw std::runtime_error("cannot write " + in_quotes(path) + ": " + why);
}

FileSizeSignalIgnored::FileSizeSignalIgnored() {
  std::lock_guard<std::mutex> lock(g_xfsz_mu);
  if (g_xfsz_users++ > 0) return;
  struct sigaction cur;
  g_xfsz_ignoring = false;
  if (::sigaction(SIGXFSZ, nullptr, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) return;
  struct sigaction ign;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  g_xfsz_ignoring = ::sigaction(SIGXFSZ, &ign, &g_xfsz_old) == 0;
}

FileSizeSignalIgnored::~FileSizeSignalIgnored() {
  std::lock_guard<std::mutex> lock(g_xfsz_mu);
  if (--g_xfsz_users > 0) return;
  struct sigaction cur;
  // Put the old action back only if nobody replaced ours meanwhile.
  if (g_xfsz_ignoring && ::sigaction(SIGXFSZ, nullptr, &cur) == 0 && cur.sa_handler == SIG_IGN)
    ::sigaction(SIGXFSZ, &g_xfsz_old, nullptr);
  g_xfsz_ignoring = false;
}

}  // namespace lmscope
