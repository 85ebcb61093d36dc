// MappedFile: a whole file memory-mapped read-only, unmapped when the object dies.
// Tensors read from safetensors are views into this mapping, so they hold it through a
// shared_ptr (see SafetensorsFile) rather than copying gigabytes of weights.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace lmscope {

class MappedFile {
 public:
  // Throws std::runtime_error "<path>: cannot open: <reason>" (or "is not a regular file").
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // Pages are PROT_READ: the data is shared with the page cache, and writing through a
  // tensor view of it is a bug that should fault, not silently diverge from the file.
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lmscope
