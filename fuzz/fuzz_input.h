// Helpers for the libFuzzer targets (fuzz/README.md): our readers take paths, so each input is
// written to a private temporary file first. A target catches std::exception: a one-line error
// is the expected answer to a bad file; anything else (a signal, a sanitizer report, a hang, a
// leak) is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace fuzz {

// A directory of this process's own, removed at exit.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("lmscope-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(scratch(), ec); });
    return d;
  }();
  return dir;
}

// Writes the input to scratch()/name and returns the path.
inline std::string write(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = (scratch() / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace fuzz
