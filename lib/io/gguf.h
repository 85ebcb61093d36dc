// GGUF reader: a memory-mapped .gguf file (llama.cpp's format) validated in full when it is
// opened, so later access cannot read outside the mapping. A metadata-only open (for a
// tokenizer) also accepts a file whose tensor data is cut off: a header-only download.
//
// Layout (little-endian; versions 2 and 3, version 1 is refused):
//   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
//   kv[]:          string key, u32 value_type, value
//   tensor_info[]: string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset
//   padding to `general.alignment` (default 32), then the data section.
// A string is u64 length + bytes; an array is u32 element type, u64 count, elements (arrays
// may nest). Tensor dims are in ggml order: ne[0] is the contiguous one, so a PyTorch
// Linear weight [out, in] is stored with ne = [in, out]. docs/gguf.md has the details.
//
// Every error is one line that starts with the file's path and names the key or tensor.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace lmscope {

// ---- ggml tensor types ----------------------------------------------------------------

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;      // "Q4_1", as gguf-py and llama.cpp spell it
  uint32_t block_size;   // elements per block (1 for plain types)
  uint32_t type_size;    // bytes per block
  bool dequantizable;    // lmscope can turn it into float32
};

// The entry for a ggml type number, or nullptr when the number is unknown (or a type that
// ggml removed, like 4/5 = Q4_2/Q4_3).
const GgmlTypeInfo* ggml_type_info(uint32_t id);
// "Q4_1", or "type 99" for an unknown number.
std::string ggml_type_name(uint32_t id);
// Comma-separated names of the types lmscope can dequantize, for error messages and docs.
std::string ggml_dequantizable_types();

// ---- metadata values ------------------------------------------------------------------

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8,
  Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_type_name(GgufType t);  // "uint32", "string", "array"...

class GgufValue;
// An array value. Its elements stay in the file's mapping until read (a 262,144-token
// vocabulary, its scores and types would be 36 MiB as GgufValues, more than the file's 6 MiB
// of them): `data` points at the first element, valid while the GgufFile lives; open() has
// checked every element. Only an array of arrays (no real file has one) holds its elements.
struct GgufArray {
  GgufType elem_type = GgufType::U8;
  uint64_t count = 0;
  const uint8_t* data = nullptr;    // elements as written in the file (not for an array of arrays)
  std::vector<GgufValue> nested;    // an array of arrays: its elements, parsed

  size_t size() const { return size_t(count); }
  // Element i, decoded (in a string array it walks from the start: read those with for_each).
  GgufValue at(size_t i) const;
  // f(element) for every element, in order.
  void for_each(const std::function<void(const GgufValue&)>& f) const;
};

// One metadata value as it is in the file: the type written there and its payload.
class GgufValue {
 public:
  using Payload = std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray>;
  GgufValue() = default;
  GgufValue(GgufType type, Payload v) : type_(type), v_(std::move(v)) {}

  GgufType type() const { return type_; }
  bool is_integer() const;  // U8..I64 (not bool)
  bool is_float() const { return type_ == GgufType::F32 || type_ == GgufType::F64; }
  // Payload access; each throws std::logic_error on the wrong kind: use GgufFile's checked
  // getters for values read from a file, they name the file and key.
  uint64_t as_uint() const;   // unsigned integer types
  int64_t as_int() const;     // signed integer types
  double as_double() const;   // F32 (exact widening) / F64
  bool as_bool() const;
  const std::string& as_string() const;
  const GgufArray& as_array() const;
  // A short rendering for messages and dumps: 3, 1e-05, "gpt2", [string x 49152].
  std::string describe() const;

 private:
  GgufType type_ = GgufType::U8;
  Payload v_;
};

struct GgufKV {
  std::string key;
  GgufValue value;
};

// ---- tensors --------------------------------------------------------------------------

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;   // ggml order: ne[0] contiguous; n_dims entries (0..4)
  uint32_t type = 0;         // ggml type number (ggml_type_info)
  uint64_t offset = 0;       // from the start of the data section, as written
  uint64_t nbytes = 0;       // bytes of data
  int64_t numel() const;
  // PyTorch order (ne reversed): token_embd.weight ne [576, 49152] -> [49152, 576].
  Shape shape() const;
};

// Full: every tensor's data must lie inside the file. MetadataOnly: the metadata and tensor
// infos are checked as in Full, but tensor data may run past the end of the file (a header
// cut from a large model, all a tokenizer needs); has_tensor_data() says whether it does.
enum class GgufOpen { Full, MetadataOnly };

class GgufFile {
 public:
  // Throws std::runtime_error with a one-line message starting with `path`.
  static GgufFile open(const std::string& path, GgufOpen mode = GgufOpen::Full);

  const std::string& path() const;
  uint32_t version() const;
  uint64_t alignment() const;    // general.alignment, or 32
  uint64_t data_offset() const;  // file offset of the data section
  uint64_t file_size() const;

  // Metadata in file order; lookups by key.
  const std::vector<GgufKV>& metadata() const;
  bool has(const std::string& key) const;
  const GgufValue& value(const std::string& key) const;  // throws "key 'k' is missing"
  // Checked getters: throw "<path>: key 'k' ..." when missing or of another type. Integer
  // getters accept any integer type whose value fits; get_float accepts F32/F64.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  uint64_t get_uint(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;
  // The same with a default when the key is absent (a present key of the wrong type throws).
  std::string get_string(const std::string& key, const std::string& dflt) const;
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key, double dflt) const;
  bool get_bool(const std::string& key, bool dflt) const;

  // Tensors in file order.
  const std::vector<GgufTensorInfo>& tensors() const;
  bool has_tensor(const std::string& name) const;
  const GgufTensorInfo& tensor_info(const std::string& name) const;  // throws if absent
  // Whether every tensor's data lies inside the file (always true after a Full open).
  bool has_tensor_data() const;
  // Into the mapping; throws (naming the tensor) when its data is not in the file.
  const uint8_t* tensor_data(const GgufTensorInfo& t) const;
  // The tensor as float32 in PyTorch order. F32 tensors are zero-copy views into the
  // mapping (they keep it alive); every other supported type is dequantized into a new
  // tensor, in parallel over blocks. Refuses a type it cannot dequantize by name.
  Tensor to_f32(const std::string& name) const;
  Tensor to_f32(const GgufTensorInfo& t) const;

  std::shared_ptr<void> owner() const;  // keeps the mapping alive

 private:
  GgufFile() = default;  // only open() makes one, so impl_ is never null
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// True when the first four bytes of the file are "GGUF" (false when it cannot be read).
bool is_gguf_file(const std::string& path);

}  // namespace lmscope
