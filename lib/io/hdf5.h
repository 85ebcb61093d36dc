// A small RAII wrapper over the HDF5 C API: the only place in lmscope that includes hdf5.h.
// Every handle is closed by its destructor, objects are move-only, and every HDF5 failure
// becomes a std::runtime_error with one line naming the file and the object. HDF5's own
// error-stack printing is switched off (it would spray multi-line dumps onto stderr).
//
// Readers trust nothing a file says about itself: before any read, the type class, the
// number of elements and the bytes the file really stores are checked, so a hostile header
// (a string array where one string is expected, 2^40 elements with nothing stored) ends in
// the same one-line error instead of an overflow or a huge allocation. Every read runs under a
// deadline (io/hdf5_deadline.h): libhdf5 1.10.8 loops forever on some damaged files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope::h5 {

using hid = int64_t;   // hid_t without including hdf5.h

// One owned HDF5 identifier (file, group, dataset, attribute, dataspace, type, plist).
class Handle {
 public:
  using Closer = int (*)(hid);
  Handle() = default;
  Handle(hid id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();             // closes, ignoring errors (destructor path)
  int close();              // closes and returns the HDF5 status (< 0 on failure)

 private:
  hid id_ = -1;
  Closer closer_ = nullptr;
};

// What a dataset holds, as double whatever its stored type (HDF5 converts on read).
struct DatasetData {
  Shape shape;
  std::vector<double> values;
  bool is_int = false;      // stored class is integer (ids, masks, counts)
};

// ExternalLink: a link into another file. lmscope never writes one, and a reader that followed
// it would show another file's data (or block on a FIFO it names): kind() reports it without
// following it, and TraceReader refuses a trace that holds one.
enum class ChildKind { Group, Dataset, Other, ExternalLink };

// Something that carries attributes: a group (the root included) or a dataset.
class Object {
 public:
  const std::string& file_path() const { return file_; }
  const std::string& name() const { return name_; }   // path inside the file, "/step_0000"
  hid id() const { return h_.get(); }
  // Identifies the object itself, whatever link led to it (file number + address): two
  // handles on one group give the same key. Used to detect link cycles.
  std::string identity() const;

  void set_attr(const std::string& key, const std::string& v);
  void set_attr(const std::string& key, const char* v) { set_attr(key, std::string(v)); }
  void set_attr(const std::string& key, int64_t v);
  void set_attr(const std::string& key, int v) { set_attr(key, int64_t(v)); }
  void set_attr(const std::string& key, double v);
  void set_attr(const std::string& key, const std::vector<int32_t>& v);

  bool has_attr(const std::string& key) const;
  std::vector<std::string> attr_names() const;
  bool attr_is_string(const std::string& key) const;
  bool attr_is_int(const std::string& key) const;
  // One string, fixed or variable length, in a scalar (or one-element) attribute; an array
  // of strings or a non-string type is an error.
  std::string attr_string(const std::string& key) const;
  int64_t attr_int(const std::string& key) const;          // a single number, converted
  double attr_double(const std::string& key) const;
  std::vector<int32_t> attr_ints(const std::string& key) const;  // any number of elements
  std::vector<double> attr_doubles(const std::string& key) const;

 protected:
  Object() = default;
  Object(Handle h, std::string file, std::string name)
      : h_(std::move(h)), file_(std::move(file)), name_(std::move(name)) {}
  // "'<file>' <object>: <what>" -> std::runtime_error (with HDF5's innermost reason)
  [[noreturn]] void fail(const std::string& what) const;

  Handle h_;
  std::string file_;
  std::string name_;
};

class Dataset : public Object {
 public:
  Dataset() = default;
  Dataset(Handle h, std::string file, std::string name)
      : Object(std::move(h), std::move(file), std::move(name)) {}
  Shape shape() const;   // throws for a null dataspace or dimensions that overflow
  bool is_int() const;
  // Integer or float datasets only; refuses a dataset that claims more bytes than the file
  // stores for it (an unallocated dataset with a huge shape).
  DatasetData read() const;
  // A dataset of strings (variable or fixed length), in row-major order.
  std::vector<std::string> read_strings() const;

 private:
  // shape() as an element count, after checking that numel * file_elem_bytes fits in what
  // the file stores for this dataset.
  size_t checked_numel(size_t file_elem_bytes) const;
};

class Group : public Object {
 public:
  Group() = default;
  Group(Handle h, std::string file, std::string name)
      : Object(std::move(h), std::move(file), std::move(name)) {}

  // Relative slash paths ("layers/3/attn"); create_group makes missing parents on demand
  // and opens groups that already exist.
  Group create_group(const std::string& path);
  Group open_group(const std::string& path) const;
  bool exists(const std::string& path) const;   // a link of that (nested) path exists
  ChildKind kind(const std::string& path) const;
  std::vector<std::string> children() const;    // link names, in name order

  // Datasets are written whole, contiguous. With gzip_level 1-9, those over 64 KiB are
  // chunked, byte-shuffled and gzip-compressed (small ones stay contiguous so h5dump/h5py
  // read fast). Off by default: float activations shrink only 10-30% and deflate costs more
  // than the forward pass when every hook of a real model is written (docs/benchmarks.md).
  // An empty Shape writes a scalar.
  Dataset write_dataset(const std::string& name, const Shape& shape, const float* data, int gzip_level = 0);
  Dataset write_dataset(const std::string& name, const Shape& shape, const int32_t* data, int gzip_level = 0);
  // Variable-length UTF-8 strings (what h5py writes for str): shape {} holds one string
  // (a scalar), shape {n} holds n.
  Dataset write_strings(const std::string& name, const Shape& shape, const std::vector<std::string>& values);
  Dataset open_dataset(const std::string& path) const;
  DatasetData read_dataset(const std::string& path) const { return open_dataset(path).read(); }

 private:
  Dataset write_raw(const std::string& name, const Shape& shape, const void* data, bool is_int, int gzip_level);
  std::string child_name(const std::string& path) const;
};

class File {
 public:
  static File create(const std::string& path);      // truncates an existing file
  // Creates path with O_EXCL: fails if anything exists there, so it never truncates a file
  // someone else made. exists_already is set when that is why it failed.
  static File create_new(const std::string& path, bool* exists_already = nullptr);
  static File open_read(const std::string& path);   // read-only
  static bool is_hdf5(const std::string& path);     // false for missing / non-HDF5 files

  File() = default;
  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  ~File() = default;   // the handle closes itself; close() reports failures instead

  const std::string& path() const { return path_; }
  Group& root() { return root_; }
  const Group& root() const { return root_; }
  bool is_open() const { return file_.valid(); }
  // Flushes and closes; throws on failure. Groups/datasets the caller still holds must be
  // released first (the file is opened with the "strong" close degree, so they become
  // invalid either way and the OS file is really closed when this returns).
  void close();

 private:
  File(Handle file, Group root, std::string path)
      : path_(std::move(path)), file_(std::move(file)), root_(std::move(root)) {}
  std::string path_;
  Handle file_;
  Group root_;   // declared after file_: destroyed first
};

// Turns off HDF5's automatic error printing for the calling thread (idempotent, cheap).
void silence_errors();

}  // namespace lmscope::h5
