// llama.cpp's ggml libraries for the bit-for-bit tests: the libggml-base.so / libggml-cpu.so
// that scripts/build-llamacpp.sh builds (the build scripts/llamacpp_logits.py --where names:
// $LMSCOPE_CACHE/llama-cpp-python-VERSION/build/bin, default cache ~/.cache/lmscope), loaded with
// dlopen, and their public type traits. A test skips with one line when llama.cpp is not built.
#pragma once
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/test_util.h"

namespace lmscope::ggml_lib {

// ggml's declarations, as the pinned release (llama-cpp-python 0.3.36) has them: ggml.h
// struct ggml_type_traits and ggml-cpu.h struct ggml_type_traits_cpu.
using to_float_t = void (*)(const void*, float*, int64_t);
using from_float_t = void (*)(const float*, void*, int64_t);
using vec_dot_t = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);
struct TypeTraits {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  to_float_t to_float;
  from_float_t from_float_ref;
};
struct TypeTraitsCpu {
  from_float_t from_float;
  vec_dot_t vec_dot;
  int vec_dot_type;
  int64_t nrows;
};

struct Ggml {
  const TypeTraits* (*traits)(int) = nullptr;
  const TypeTraitsCpu* (*traits_cpu)(int) = nullptr;
  std::string why_not;   // empty when loaded
};

// The build scripts/llamacpp_logits.py --where names (the one place that knows the pin).
inline const Ggml& ggml() {
  static const Ggml g = [] {
    Ggml out;
    const testing_util::CliRun where =
        testing_util::run_cli(std::string(LMSCOPE_PYTHON) + " " + LMSCOPE_SOURCE_DIR + "/scripts/llamacpp_logits.py --where");
    if (where.code != 0) {
      out.why_not = where.err.substr(0, where.err.find_last_not_of('\n') + 1);
      return out;
    }
    const std::string bin = where.out.substr(0, where.out.find_last_not_of('\n') + 1) + "/build/bin/";
    void* base = ::dlopen((bin + "libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* cpu = base ? ::dlopen((bin + "libggml-cpu.so").c_str(), RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (!cpu) {
      out.why_not = std::string("cannot load ") + bin + "libggml-cpu.so: " + ::dlerror();
      return out;
    }
    out.traits = reinterpret_cast<const TypeTraits* (*)(int)>(::dlsym(base, "ggml_get_type_traits"));
    out.traits_cpu = reinterpret_cast<const TypeTraitsCpu* (*)(int)>(::dlsym(cpu, "ggml_get_type_traits_cpu"));
    auto init = reinterpret_cast<void (*)()>(::dlsym(cpu, "ggml_cpu_init"));
    if (!out.traits || !out.traits_cpu || !init) out.why_not = "libggml lacks the type traits functions";
    if (init) init();
    return out;
  }();
  return g;
}

#define SKIP_WITHOUT_GGML()                                                     \
  do {                                                                          \
    if (!ggml().why_not.empty()) {                                              \
      std::printf("[ skipped ] %s\n", ggml().why_not.c_str());                  \
      GTEST_SKIP() << ggml().why_not;                                           \
    }                                                                           \
  } while (0)

}  // namespace lmscope::ggml_lib
