// SafetensorsFile: header validation and tensor views over one mapped file.
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/json_error.h"
#include "io/mapped_file.h"

namespace lmscope {
// The header's records, named rather than in the anonymous namespace below: SafetensorsFile::Impl
// holds them, and a unity build would warn about a type with linkage holding one without.
namespace safetensors_header {
// A dtype the safetensors format defines with a whole-byte element size.
struct StDtype {
  const char* name;
  size_t size;
  bool supported;
  DType dtype;
};
// One tensor's record.
struct Entry {
  std::string dtype_str;
  const StDtype* dt = nullptr;
  Shape shape;
  uint64_t begin = 0, end = 0;
};
}  // namespace safetensors_header
using safetensors_header::Entry;
using safetensors_header::StDtype;

namespace {

using nlohmann::json;

// Every dtype the safetensors format defines with a whole-byte element size. All are
// size-checked so the layout is validated even for tensors lmscope will not compute with.
constexpr StDtype kDtypes[] = {
    {"F32", 4, true, DType::F32},      {"F16", 2, true, DType::F16},
    {"BF16", 2, true, DType::BF16},    {"F64", 8, false, DType::F32},
    {"I64", 8, false, DType::F32},     {"U64", 8, false, DType::F32},
    {"I32", 4, false, DType::F32},     {"U32", 4, false, DType::F32},
    {"I16", 2, false, DType::F32},     {"U16", 2, false, DType::F32},
    {"I8", 1, false, DType::F32},      {"U8", 1, false, DType::F32},
    {"BOOL", 1, false, DType::F32},    {"F8_E4M3", 1, false, DType::F32},
    {"F8_E5M2", 1, false, DType::F32}, {"F8_E8M0", 1, false, DType::F32},
    {"C64", 8, false, DType::F32},
};

const StDtype* find_dtype(const std::string& s) {
  for (const auto& d : kDtypes)
    if (s == d.name) return &d;
  return nullptr;
}

std::string unsupported_dtype(const std::string& dtype) {
  return "dtype '" + dtype + "' is not supported (F32, F16, BF16)";
}

// A non-negative JSON integer, or a one-line complaint naming `what`.
uint64_t get_uint(const std::string& path, const json& v, const std::string& what) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    fail_file(path, what + " must be a non-negative integer, got " + json_short(v));
  return v.get<uint64_t>();
}

}  // namespace

struct SafetensorsFile::Impl {
  explicit Impl(const std::string& path) : map(path) {}
  MappedFile map;
  const uint8_t* data = nullptr;  // start of the data section
  uint64_t data_size = 0;
  std::map<std::string, Entry> entries;
  std::map<std::string, std::string> metadata;

  const Entry& entry(const std::string& name) const {
    auto it = entries.find(name);
    if (it == entries.end()) fail_file(map.path(), "tensor '" + name + "' is not in this file");
    if (!it->second.dt->supported)
      fail_file(map.path(), "tensor '" + name + "': " + unsupported_dtype(it->second.dtype_str));
    return it->second;
  }
};

namespace {

Entry parse_entry(const std::string& path, const std::string& name, const json& v,
                  uint64_t data_size) {
  const std::string where = "tensor '" + name + "': ";
  if (!v.is_object()) fail_file(path, where + "entry must be an object, got " + json_kind(v));
  Entry e;

  auto dt = v.find("dtype");
  if (dt == v.end()) fail_file(path, where + "field 'dtype' is missing");
  if (!dt->is_string()) fail_file(path, where + "field 'dtype' must be a string, got " + json_kind(*dt));
  e.dtype_str = dt->get<std::string>();
  e.dt = find_dtype(e.dtype_str);
  if (!e.dt) fail_file(path, where + unsupported_dtype(e.dtype_str));  // not even a known layout

  auto sh = v.find("shape");
  if (sh == v.end()) fail_file(path, where + "field 'shape' is missing");
  if (!sh->is_array()) fail_file(path, where + "field 'shape' must be an array, got " + json_kind(*sh));
  // Products are tracked in 128 bits so absurd shapes are refused instead of wrapping.
  unsigned __int128 bytes = e.dt->size;
  for (const auto& d : *sh) {
    uint64_t n = get_uint(path, d, where + "each 'shape' entry");
    e.shape.push_back(int64_t(n));
    bytes *= n;
    if (bytes > (unsigned __int128)(uint64_t(1) << 62))
      fail_file(path, where + "shape " + json_short(*sh) + " is too large");
  }

  auto off = v.find("data_offsets");
  if (off == v.end()) fail_file(path, where + "field 'data_offsets' is missing");
  if (!off->is_array() || off->size() != 2)
    fail_file(path, where + "field 'data_offsets' must be [begin, end], got " + json_short(*off));
  e.begin = get_uint(path, (*off)[0], where + "data_offsets begin");
  e.end = get_uint(path, (*off)[1], where + "data_offsets end");
  // Appended, not "[" + std::to_string(...): GCC 12 reports a false -Wrestrict on that here.
  std::string offs = "[";
  offs.append(std::to_string(e.begin)).append(",").append(std::to_string(e.end)).append("]");
  if (e.begin > e.end) fail_file(path, where + "data_offsets " + offs + " has begin after end");
  if (e.end > data_size)
    fail_file(path, where + "data_offsets " + offs + " run past the data section (" +
                   std::to_string(data_size) + " bytes); is the file truncated?");
  if (uint64_t(bytes) != e.end - e.begin)
    fail_file(path, where + "shape " + shape_str(e.shape) + " " + e.dtype_str + " needs " +
                   std::to_string(uint64_t(bytes)) + " bytes, data_offsets give " +
                   std::to_string(e.end - e.begin));
  return e;
}

void check_no_overlap(const std::string& path, const std::map<std::string, Entry>& entries) {
  std::vector<std::pair<const std::string*, const Entry*>> v;
  for (const auto& [n, e] : entries)
    if (e.end > e.begin) v.push_back({&n, &e});  // empty tensors occupy no bytes
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second->begin < b.second->begin; });
  // Sorted by begin, a tensor overlaps an earlier one iff it starts before the furthest end so far.
  for (size_t i = 1, far = 0; i < v.size(); ++i) {
    if (v[i].second->begin < v[far].second->end) {
      auto desc = [](const std::string& n, const Entry& e) {
        return "'" + n + "' [" + std::to_string(e.begin) + "," + std::to_string(e.end) + "]";
      };
      fail_file(path, "tensors " + desc(*v[far].first, *v[far].second) + " and " +
                     desc(*v[i].first, *v[i].second) + " overlap");
    }
    if (v[i].second->end > v[far].second->end) far = i;
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto impl = std::make_shared<Impl>(path);
  const uint8_t* base = impl->map.data();
  const uint64_t size = impl->map.size();
  if (size < 8)
    fail_file(path, "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base[i];  // little-endian u64
  if (n > size - 8)
    fail_file(path, "header length " + std::to_string(n) + " runs past the end of the file (" +
                   std::to_string(size) + " bytes)");

  json h;
  try {
    h = json::parse(reinterpret_cast<const char*>(base + 8),
                    reinterpret_cast<const char*>(base + 8 + n));
  } catch (const json::exception& e) {
    fail_file(path, "header is not valid JSON: " + json_error_text(e));
  }
  if (!h.is_object()) fail_file(path, "header must be a JSON object, got " + json_kind(h));

  // Data offsets are relative to the end of the header. When the header length is not a
  // multiple of 8 the data may be unaligned: tensor() copies such a tensor.
  impl->data = base + 8 + n;
  impl->data_size = size - 8 - n;
  for (const auto& [k, v] : h.items()) {
    if (k == "__metadata__") {
      if (!v.is_object()) fail_file(path, "'__metadata__' must be an object of strings, got " + json_kind(v));
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string())
          fail_file(path, "'__metadata__' entry '" + mk + "' must be a string, got " + json_kind(mv));
        impl->metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    impl->entries[k] = parse_entry(path, k, v, impl->data_size);
  }
  check_no_overlap(path, impl->entries);

  SafetensorsFile f;
  f.impl_ = std::move(impl);
  return f;
}

const std::string& SafetensorsFile::path() const { return impl_->map.path(); }

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : impl_->entries) out.push_back(n);
  return out;
}

bool SafetensorsFile::has(const std::string& name) const { return impl_->entries.count(name) != 0; }

TensorInfo SafetensorsFile::info(const std::string& name) const {
  const Entry& e = impl_->entry(name);
  return {e.dt->dtype, e.shape};
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const Entry& e = impl_->entry(name);
  return Tensor::view_or_copy(e.shape, e.dt->dtype, impl_->data + e.begin, impl_);
}

const std::string& SafetensorsFile::dtype_string(const std::string& name) const {
  auto it = impl_->entries.find(name);
  if (it == impl_->entries.end()) fail_file(path(), "tensor '" + name + "' is not in this file");
  return it->second.dtype_str;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return impl_->metadata; }

std::shared_ptr<void> SafetensorsFile::owner() const { return impl_; }

}  // namespace lmscope
