// Crafted traces for the hostile-input tests of the readers (tests/trace, tests/report): a
// sound synthetic trace (test_util.h, B = 2, T = 4 then 1, V = 16) with one dataset or
// attribute replaced through the HDF5 C API, the way someone handing out a trace could.
#pragma once
#include <gtest/gtest.h>
#include <hdf5.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "trace/trace_reader.h"

namespace lmscope::testing_util {

// Opens `path` read-write for an edit; closes it when done.
class H5Edit {
 public:
  explicit H5Edit(const std::string& path) : f_(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    if (f_ < 0) throw std::runtime_error("test setup: cannot open " + path);
  }
  ~H5Edit() { H5Fclose(f_); }
  H5Edit(const H5Edit&) = delete;
  H5Edit& operator=(const H5Edit&) = delete;
  hid_t file() const { return f_; }

  // Replaces (or creates) the dataset at `path` (a step's hook: "step_0000/logits") with
  // `dims` of float32 `fill` (or int32 when `as_int`), keeping the hook and axes attributes.
  void replace(const std::string& path, const std::string& hook, const std::string& axes, std::vector<hsize_t> dims,
               double fill = 0.5, bool as_int = false) {
    if (H5Lexists(f_, path.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f_, path.c_str(), H5P_DEFAULT);
    size_t n = 1;
    for (hsize_t d : dims) n *= size_t(d);
    hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    hid_t d = H5Dcreate2(f_, path.c_str(), as_int ? H5T_STD_I32LE : H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    if (d < 0) throw std::runtime_error("test setup: cannot create " + path);
    if (n > 0) {
      if (as_int) {
        std::vector<int32_t> v(n, int32_t(fill));
        H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      } else {
        std::vector<float> v(n, float(fill));
        H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      }
    }
    if (!hook.empty()) string_attr(d, "hook", hook);
    if (!axes.empty()) string_attr(d, "axes", axes);
    H5Dclose(d);
    H5Sclose(sp);
  }

  // Sets a scalar attribute of the object at `path` ("/" for the root), replacing it.
  void attr(const std::string& path, const std::string& key, double v, bool as_int) {
    hid_t o = H5Oopen(f_, path.c_str(), H5P_DEFAULT);
    if (H5Aexists(o, key.c_str()) > 0) H5Adelete(o, key.c_str());
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(o, key.c_str(), as_int ? H5T_STD_I64LE : H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (as_int) {
      const int64_t i = int64_t(v);
      H5Awrite(a, H5T_NATIVE_INT64, &i);
    } else {
      H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
    }
    H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(o);
  }

  void string_attr(const std::string& path, const std::string& key, const std::string& v) {
    hid_t o = H5Oopen(f_, path.c_str(), H5P_DEFAULT);
    if (H5Aexists(o, key.c_str()) > 0) H5Adelete(o, key.c_str());
    string_attr(o, key, v);
    H5Oclose(o);
  }

 private:
  static void string_attr(hid_t obj, const std::string& key, const std::string& v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, key.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT);
    const char* p = v.c_str();
    H5Awrite(a, t, &p);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }
  hid_t f_;
};

// The one-line error of opening `path` as a trace; a test failure when it opens.
inline std::string trace_open_error(const std::string& path) {
  try {
    TraceReader r(path);
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  }
  ADD_FAILURE() << "opened " << path;
  return "";
}

inline void expect_has(const std::string& m, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
}

// A sound synthetic trace at `path`, then `edit` applied to it.
template <class F>
void write_crafted_trace(const std::string& path, F&& edit) {
  write_synthetic_trace(path);
  H5Edit e(path);
  edit(e);
}

}  // namespace lmscope::testing_util
