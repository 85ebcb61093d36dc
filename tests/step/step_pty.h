// Starting a tool on a pseudo-terminal (forkpty), for the step tests that type keys.
#pragma once
#include <pty.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace lmscope::step_test {

// Runs args[0] with argv `args` on a new pseudo-terminal of size `ws` (nullptr: the size
// forkpty gives, 0 x 0). Returns the child's pid (-1 when forkpty fails); *fd is the master side.
inline pid_t spawn_in_pty(const std::vector<std::string>& args, int* fd, const winsize* ws = nullptr) {
  const pid_t pid = forkpty(fd, nullptr, nullptr, ws);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace lmscope::step_test
