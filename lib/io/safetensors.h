// Safetensors reader: memory-mapped files whose tensors come back as zero-copy views.
// Format: 8-byte little-endian header length N, N bytes of JSON header, then the data
// section; each header entry is {"dtype", "shape", "data_offsets": [begin, end]} with
// offsets relative to the data section. The header is validated in full when a file is
// opened, so later access cannot read outside the mapping.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

struct TensorInfo {
  DType dtype = DType::F32;
  Shape shape;
};

// One .safetensors file. Copies share the same mapping.
class SafetensorsFile {
 public:
  // Throws std::runtime_error with a one-line message starting with `path`.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const;
  std::vector<std::string> names() const;  // sorted
  bool has(const std::string& name) const;
  // Both throw if the name is absent, or if its dtype is a valid safetensors type that
  // lmscope cannot compute with (F64, I64, F8_E4M3...): such tensors are size-checked at
  // open but only refused when asked for, so a stray int buffer does not sink a model.
  TensorInfo info(const std::string& name) const;
  Tensor tensor(const std::string& name) const;  // a view that keeps the mapping alive (a copy when misaligned)
  // The dtype as written in the header ("F32", "F64"...), for any tensor present.
  const std::string& dtype_string(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const;  // "__metadata__"
  std::shared_ptr<void> owner() const;  // keeps the mapping alive

 private:
  SafetensorsFile() = default;  // only open() makes one, so impl_ is never null
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// A model's weights: one model.safetensors, or the shards named by
// model.safetensors.index.json ({"weight_map": {tensor name: shard file}}).
class SafetensorsModel {
 public:
  // `path` is a directory (model.safetensors preferred over the index, as transformers
  // does), a .safetensors file, or an index .json file.
  static SafetensorsModel open(const std::string& path);

  const std::string& source() const { return source_; }  // the file or index opened
  std::vector<std::string> names() const;                 // sorted
  bool has(const std::string& name) const;
  TensorInfo info(const std::string& name) const;
  Tensor tensor(const std::string& name) const;
  const SafetensorsFile& file_of(const std::string& name) const;
  std::shared_ptr<void> storage() const;  // keeps every shard's mapping alive

 private:
  SafetensorsModel() = default;  // only open() makes one
  std::string source_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> route_;  // tensor name -> index into files_
};

}  // namespace lmscope
