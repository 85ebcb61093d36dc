// GgufFile: header, metadata and tensor-info parsing with every read bounds-checked against
// the file size, then tensor access (views and dequantization) over the validated layout.
#include "io/gguf.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "io/gguf_dequant.h"
#include "io/json_error.h"
#include "io/mapped_file.h"

namespace lmscope {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;  // nested arrays; real files use 1

// ggml's type table (ggml.c type_traits / gguf-py GGML_QUANT_SIZES). Sizes are needed for
// every type, dequantizable or not, so any file's layout can be validated.
constexpr GgmlTypeInfo kTypes[] = {
    {0, "F32", 1, 4, true},         {1, "F16", 1, 2, true},
    {2, "Q4_0", 32, 18, true},      {3, "Q4_1", 32, 20, true},
    {6, "Q5_0", 32, 22, true},      {7, "Q5_1", 32, 24, true},
    {8, "Q8_0", 32, 34, true},      {9, "Q8_1", 32, 36, false},  // ggml: half d, half s, i8 qs[32]
    {10, "Q2_K", 256, 84, true},    {11, "Q3_K", 256, 110, true},
    {12, "Q4_K", 256, 144, true},   {13, "Q5_K", 256, 176, true},
    {14, "Q6_K", 256, 210, true},   {15, "Q8_K", 256, 292, false},
    {16, "IQ2_XXS", 256, 66, false}, {17, "IQ2_XS", 256, 74, false},
    {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, true},   {21, "IQ3_S", 256, 110, false},
    {22, "IQ2_S", 256, 82, false},  {23, "IQ4_XS", 256, 136, false},
    {24, "I8", 1, 1, false},        {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},       {27, "I64", 1, 8, false},
    {28, "F64", 1, 8, false},       {29, "IQ1_M", 256, 56, false},
    {30, "BF16", 1, 2, true},       {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false},  {39, "MXFP4", 32, 17, false},
    {40, "NVFP4", 64, 36, false},   {41, "Q1_0", 128, 18, false},
};

// A name from the file, quoted for a message: control bytes as '?', long names cut.
std::string q(const std::string& s) {
  std::string out = "'";
  const size_t n = std::min<size_t>(s.size(), 96);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : char(c);
  }
  if (s.size() > n) out += "...";
  return out + "'";
}

std::string num(uint64_t v) { return std::to_string(v); }

bool known_value_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

// The fewest bytes one value of type t can occupy (a string: its length; an array: its
// element type and count), used to refuse absurd counts before allocating for them.
uint64_t min_value_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: case GgufType::String: return 8;
    case GgufType::Array: return 12;
  }
  return 1;
}

// Reads little-endian fields from the mapping, refusing to run past its end.
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, uint64_t size)
      : path_(path), base_(base), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      fail_file(path_, "truncated file: " + what + " needs " + num(n) + " bytes at offset " + num(pos_) +
                      ", but the file ends at " + num(size_));
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));  // little-endian host assumed (x86-64, aarch64)
    pos_ += sizeof(T);
    return v;
  }
  const uint8_t* here() const { return base_ + pos_; }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  std::string string(const std::string& what) {
    const uint64_t n = read<uint64_t>(what + " (string length)");
    need(n, what + " (string of " + num(n) + " bytes)");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, const std::string& path, GgufType t, const std::string& where,
                     int depth) {
  switch (t) {
    case GgufType::U8: return {t, uint64_t(c.read<uint8_t>(where))};
    case GgufType::I8: return {t, int64_t(c.read<int8_t>(where))};
    case GgufType::U16: return {t, uint64_t(c.read<uint16_t>(where))};
    case GgufType::I16: return {t, int64_t(c.read<int16_t>(where))};
    case GgufType::U32: return {t, uint64_t(c.read<uint32_t>(where))};
    case GgufType::I32: return {t, int64_t(c.read<int32_t>(where))};
    case GgufType::U64: return {t, c.read<uint64_t>(where)};
    case GgufType::I64: return {t, c.read<int64_t>(where)};
    case GgufType::F32: return {t, double(c.read<float>(where))};
    case GgufType::F64: return {t, c.read<double>(where)};
    case GgufType::Bool: {
      const uint8_t b = c.read<uint8_t>(where);
      if (b > 1) fail_file(path, where + ": bool value " + num(b) + " is not 0 or 1");
      return {t, b == 1};
    }
    case GgufType::String: return {t, c.string(where)};
    case GgufType::Array: {
      if (depth >= kMaxArrayDepth)
        fail_file(path, where + ": arrays nested more than " + num(kMaxArrayDepth) + " deep");
      const uint32_t et = c.read<uint32_t>(where + " (array element type)");
      if (!known_value_type(et)) fail_file(path, where + ": unknown array element type " + num(et));
      const uint64_t n = c.read<uint64_t>(where + " (array length)");
      GgufArray arr;
      arr.elem_type = GgufType(et);
      const uint64_t min = min_value_size(arr.elem_type);
      if (n > c.left() / min)
        fail_file(path, where + ": array of " + num(n) + " " + gguf_type_name(arr.elem_type) +
                       " values cannot fit in the " + num(c.left()) +
                       " bytes left in the file; is the file truncated?");
      arr.count = n;
      if (arr.elem_type == GgufType::Array) {
        arr.nested.reserve(size_t(n));
        for (uint64_t i = 0; i < n; ++i)
          arr.nested.push_back(read_value(c, path, arr.elem_type, where + " element " + num(i), depth + 1));
        return {t, std::move(arr)};
      }
      // Checked here, read later from the mapping (GgufArray): strings' lengths, bools' 0/1.
      arr.data = c.here();
      if (arr.elem_type == GgufType::String) {
        for (uint64_t i = 0; i < n; ++i)
          c.skip(c.read<uint64_t>(where + " element " + num(i) + " (string length)"),
                 where + " element " + num(i) + " (string)");
      } else if (arr.elem_type == GgufType::Bool) {
        for (uint64_t i = 0; i < n; ++i) read_value(c, path, arr.elem_type, where + " element " + num(i), depth + 1);
      } else {
        c.skip(n * min_value_size(arr.elem_type), where + " (" + num(n) + " " + gguf_type_name(arr.elem_type) + " values)");
      }
      return {t, std::move(arr)};
    }
  }
  fail_file(path, where + ": unknown value type " + num(uint32_t(t)));
}

// One element of a checked array at p (in the mapping), decoded; p moves past it.
GgufValue decode_element(GgufType t, const uint8_t*& p) {
  auto take = [&p](auto v) {
    std::memcpy(&v, p, sizeof v);   // little-endian host assumed, as Cursor::read
    p += sizeof v;
    return v;
  };
  switch (t) {
    case GgufType::U8: return {t, uint64_t(take(uint8_t()))};
    case GgufType::I8: return {t, int64_t(take(int8_t()))};
    case GgufType::U16: return {t, uint64_t(take(uint16_t()))};
    case GgufType::I16: return {t, int64_t(take(int16_t()))};
    case GgufType::U32: return {t, uint64_t(take(uint32_t()))};
    case GgufType::I32: return {t, int64_t(take(int32_t()))};
    case GgufType::U64: return {t, take(uint64_t())};
    case GgufType::I64: return {t, take(int64_t())};
    case GgufType::F32: return {t, double(take(float()))};
    case GgufType::F64: return {t, take(double())};
    case GgufType::Bool: return {t, take(uint8_t()) == 1};
    case GgufType::String: {
      const uint64_t n = take(uint64_t());
      std::string s(reinterpret_cast<const char*>(p), size_t(n));
      p += n;
      return {t, std::move(s)};
    }
    case GgufType::Array: break;
  }
  throw std::logic_error("GgufArray: an array of arrays holds its elements");
}

}  // namespace

GgufValue GgufArray::at(size_t i) const {
  if (i >= size()) throw std::out_of_range("GgufArray::at(" + num(i) + "): " + num(count) + " elements");
  if (elem_type == GgufType::Array) return nested[i];
  const uint8_t* p = data;
  if (elem_type == GgufType::String)
    for (size_t k = 0; k < i; ++k) decode_element(elem_type, p);
  else
    p += i * min_value_size(elem_type);   // fixed-size elements
  return decode_element(elem_type, p);
}

void GgufArray::for_each(const std::function<void(const GgufValue&)>& f) const {
  if (elem_type == GgufType::Array) {
    for (const GgufValue& v : nested) f(v);
    return;
  }
  const uint8_t* p = data;
  for (size_t i = 0; i < size(); ++i) f(decode_element(elem_type, p));
}

// ---- types ------------------------------------------------------------------------------

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string ggml_type_name(uint32_t id) {
  const GgmlTypeInfo* t = ggml_type_info(id);
  return t ? t->name : "type " + num(id);
}

std::string ggml_dequantizable_types() {
  std::string s;
  for (const auto& t : kTypes)
    if (t.dequantizable) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8: return "uint8";
    case GgufType::I8: return "int8";
    case GgufType::U16: return "uint16";
    case GgufType::I16: return "int16";
    case GgufType::U32: return "uint32";
    case GgufType::I32: return "int32";
    case GgufType::F32: return "float32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "uint64";
    case GgufType::I64: return "int64";
    case GgufType::F64: return "float64";
  }
  return "unknown";
}

// ---- values -----------------------------------------------------------------------------

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
  }
}

namespace {
template <class T>
const T& payload(const GgufValue::Payload& v, GgufType t, const char* want) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw std::logic_error(std::string("GgufValue: a ") + gguf_type_name(t) + " is not " + want);
}
}  // namespace

uint64_t GgufValue::as_uint() const { return payload<uint64_t>(v_, type_, "an unsigned integer"); }
int64_t GgufValue::as_int() const { return payload<int64_t>(v_, type_, "a signed integer"); }
double GgufValue::as_double() const { return payload<double>(v_, type_, "a float"); }
bool GgufValue::as_bool() const { return payload<bool>(v_, type_, "a bool"); }
const std::string& GgufValue::as_string() const { return payload<std::string>(v_, type_, "a string"); }
const GgufArray& GgufValue::as_array() const { return payload<GgufArray>(v_, type_, "an array"); }

std::string GgufValue::describe() const {
  std::ostringstream o;
  if (auto* u = std::get_if<uint64_t>(&v_)) o << *u;
  else if (auto* i = std::get_if<int64_t>(&v_)) o << *i;
  else if (auto* d = std::get_if<double>(&v_)) o << *d;
  else if (auto* b = std::get_if<bool>(&v_)) o << (*b ? "true" : "false");
  else if (auto* s = std::get_if<std::string>(&v_)) o << '"' << (s->size() > 60 ? s->substr(0, 60) + "..." : *s) << '"';
  else if (auto* a = std::get_if<GgufArray>(&v_)) o << "[" << gguf_type_name(a->elem_type) << " x " << a->size() << "]";
  return one_line(o.str());
}

// ---- tensors ----------------------------------------------------------------------------

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // validated at open not to overflow
  return n;
}

Shape GgufTensorInfo::shape() const { return Shape(ne.rbegin(), ne.rend()); }

// ---- the file ---------------------------------------------------------------------------

struct GgufFile::Impl {
  explicit Impl(const std::string& path) : map(path) {}
  MappedFile map;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<GgufKV> kvs;
  std::unordered_map<std::string, size_t> kv_index;
  std::vector<GgufTensorInfo> tensors;
  std::unordered_map<std::string, size_t> tensor_index;
  bool has_tensor_data = true;   // false only after a MetadataOnly open of a cut-off file

  // Whether t's bytes lie inside the file (its offset is validated to be aligned).
  bool data_in_file(const GgufTensorInfo& t) const {
    const uint64_t size = map.size();
    const uint64_t data_size = data_offset <= size ? size - data_offset : 0;
    return t.offset <= data_size && t.nbytes <= data_size - t.offset;
  }
};

GgufFile GgufFile::open(const std::string& path, GgufOpen mode) {
  auto impl = std::make_shared<Impl>(path);
  const uint8_t* base = impl->map.data();
  const uint64_t size = impl->map.size();
  Cursor c(path, base, size);

  // ---- header ----
  if (size < 4) fail_file(path, "truncated file: " + num(size) + " bytes, too short for the GGUF magic");
  const uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", base[0], base[1], base[2], base[3]);
    fail_file(path, std::string("bad magic (bytes ") + hex + ", expected 47 47 55 46 \"GGUF\"): not a GGUF file");
  }
  const uint32_t version = c.read<uint32_t>("header (version)");
  if (version != 0 && (version & 0xFFFF) == 0)
    fail_file(path, "GGUF version field " + num(version) + " looks byte-swapped: big-endian GGUF files are not supported");
  if (version == 1) fail_file(path, "GGUF version 1 is not supported (only versions 2 and 3)");
  if (version != 2 && version != 3) fail_file(path, "GGUF version " + num(version) + " is not supported (only 2 and 3)");
  impl->version = version;
  const uint64_t n_tensors = c.read<uint64_t>("header (tensor count)");
  const uint64_t n_kv = c.read<uint64_t>("header (metadata count)");
  // A tensor info takes at least 24 bytes (name length, n_dims, type, offset), a key/value
  // at least 13 (key length, value type, a 1-byte value).
  if (n_tensors > c.left() / 24)
    fail_file(path, "impossible tensor count " + num(n_tensors) + ": the " + num(c.left()) +
                   " bytes after the header could hold at most " + num(c.left() / 24) + " tensor infos");
  if (n_kv > (c.left() - n_tensors * 24) / 13)
    fail_file(path, "impossible metadata count " + num(n_kv) + ": the " + num(c.left()) +
                   " bytes after the header could hold at most " + num((c.left() - n_tensors * 24) / 13) +
                   " key/value pairs besides " + num(n_tensors) + " tensor infos");

  // ---- metadata ----
  impl->kvs.reserve(size_t(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata entry " + num(i) + " (key)");
    const std::string where = "key " + q(key);
    const uint32_t t = c.read<uint32_t>(where + " (value type)");
    if (!known_value_type(t)) fail_file(path, where + ": unknown value type " + num(t));
    GgufValue v = read_value(c, path, GgufType(t), where, 0);
    if (!impl->kv_index.emplace(key, impl->kvs.size()).second) fail_file(path, where + " appears twice");
    impl->kvs.push_back({std::move(key), std::move(v)});
  }
  if (auto it = impl->kv_index.find("general.alignment"); it != impl->kv_index.end()) {
    const GgufValue& v = impl->kvs[it->second].value;
    if (v.type() != GgufType::U32)
      fail_file(path, std::string("key 'general.alignment' must be a uint32, got ") + gguf_type_name(v.type()));
    const uint64_t a = v.as_uint();
    if (a == 0 || (a & (a - 1)) != 0)
      fail_file(path, "key 'general.alignment' = " + num(a) + " is not a power of two");
    impl->alignment = a;
  }

  // ---- tensor infos ----
  impl->tensors.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.string("tensor info " + num(i) + " (name)");
    const std::string where = "tensor " + q(t.name);
    const uint32_t n_dims = c.read<uint32_t>(where + " (n_dims)");
    if (n_dims > uint32_t(kMaxDims)) fail_file(path, where + ": n_dims " + num(n_dims) + " > " + num(kMaxDims));
    unsigned __int128 numel = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = c.read<uint64_t>(where + " (ne[" + num(d) + "])");
      if (n > uint64_t(std::numeric_limits<int64_t>::max())) overflow = true;
      t.ne.push_back(int64_t(n));
      numel *= n;
      if (numel > (unsigned __int128)std::numeric_limits<int64_t>::max()) overflow = true;
    }
    if (overflow) {
      std::string dims;
      for (int64_t d : t.ne) {
        if (!dims.empty()) dims += ',';
        dims += num(uint64_t(d));
      }
      fail_file(path, where + ": dims [" + dims + "] overflow: the element count does not fit in 64 bits");
    }
    t.type = c.read<uint32_t>(where + " (type)");
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    if (!ti) fail_file(path, where + ": unknown ggml type " + num(t.type));
    const int64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
    if (ne0 % ti->block_size != 0)
      fail_file(path, where + ": ne[0] = " + num(uint64_t(ne0)) + " is not a multiple of the " + ti->name +
                     " block size " + num(ti->block_size));
    const unsigned __int128 bytes = numel / ti->block_size * ti->type_size;
    // Cannot possibly be in the file; also keeps nbytes in 64 bits. A metadata-only open lets
    // a cut-off file through (its has_tensor_data() is false, checked below).
    if (bytes > size && (mode == GgufOpen::Full || bytes >> 64)) {
      fail_file(path, where + ": " + ti->name + " data of " + (bytes >> 64 ? std::string("more than 2^64") : num(uint64_t(bytes))) +
                     " bytes is larger than the whole file (" + num(size) + " bytes); is the file truncated?");
    }
    t.nbytes = uint64_t(bytes);
    t.offset = c.read<uint64_t>(where + " (offset)");
    if (!impl->tensor_index.emplace(t.name, impl->tensors.size()).second) fail_file(path, where + " appears twice");
    impl->tensors.push_back(std::move(t));
  }

  // ---- data section ----
  const uint64_t a = impl->alignment;
  const uint64_t pad = (a - c.pos() % a) % a;
  impl->data_offset = c.pos() + pad;
  if (mode == GgufOpen::Full && !impl->tensors.empty() && impl->data_offset > size)
    fail_file(path, "truncated file: the data section would start at offset " + num(impl->data_offset) +
                   ", past the end of the file (" + num(size) + " bytes)");
  for (const auto& t : impl->tensors) {
    const std::string where = "tensor " + q(t.name);
    if (t.offset % a != 0)
      fail_file(path, where + ": data offset " + num(t.offset) + " is not a multiple of the alignment " + num(a));
    if (impl->data_in_file(t)) continue;
    impl->has_tensor_data = false;
    if (mode == GgufOpen::Full)
      fail_file(path, where + " (" + ggml_type_name(t.type) + ", " + num(t.nbytes) + " bytes at file offset " +
                     num(impl->data_offset) + " + " + num(t.offset) + ") runs past the end of the file (" +
                     num(size) + " bytes); is the file truncated?");
  }
  // No two tensors may share bytes.
  std::vector<const GgufTensorInfo*> order;
  for (const auto& t : impl->tensors)
    if (t.nbytes > 0) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
      fail_file(path, "tensors " + q(order[i - 1]->name) + " and " + q(order[i]->name) + " overlap in the data section");

  GgufFile f;
  f.impl_ = std::move(impl);
  return f;
}

const std::string& GgufFile::path() const { return impl_->map.path(); }
uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }
uint64_t GgufFile::file_size() const { return impl_->map.size(); }
const std::vector<GgufKV>& GgufFile::metadata() const { return impl_->kvs; }
bool GgufFile::has(const std::string& key) const { return impl_->kv_index.count(key) != 0; }

const GgufValue& GgufFile::value(const std::string& key) const {
  auto it = impl_->kv_index.find(key);
  if (it == impl_->kv_index.end()) fail_file(path(), "key " + q(key) + " is missing");
  return impl_->kvs[it->second].value;
}

namespace {

[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const GgufValue& v,
                             const std::string& want) {
  std::string got = gguf_type_name(v.type());
  if (v.type() == GgufType::Array) got += " of " + std::string(gguf_type_name(v.as_array().elem_type));
  fail_file(path, "key " + q(key) + " must be " + want + ", got " + got);
}

// Any integer value as int64 (uint64 values above INT64_MAX refused).
bool int_of(const GgufValue& v, int64_t* out) {
  if (!v.is_integer()) return false;
  if (v.type() == GgufType::U8 || v.type() == GgufType::U16 || v.type() == GgufType::U32 ||
      v.type() == GgufType::U64) {
    if (v.as_uint() > uint64_t(std::numeric_limits<int64_t>::max())) return false;
    *out = int64_t(v.as_uint());
  } else {
    *out = v.as_int();
  }
  return true;
}

}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() != GgufType::String) wrong_type(path(), key, v, "a string");
  return v.as_string();
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& v = value(key);
  int64_t out;
  if (!int_of(v, &out)) wrong_type(path(), key, v, "an integer below 2^63");
  return out;
}

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() == GgufType::U8 || v.type() == GgufType::U16 || v.type() == GgufType::U32 ||
      v.type() == GgufType::U64)
    return v.as_uint();
  int64_t i;
  if (int_of(v, &i) && i >= 0) return uint64_t(i);
  wrong_type(path(), key, v, "a non-negative integer");
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue& v = value(key);
  if (!v.is_float()) wrong_type(path(), key, v, "a float32 or float64");
  return v.as_double();
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() != GgufType::Bool) wrong_type(path(), key, v, "a bool");
  return v.as_bool();
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() != GgufType::Array || v.as_array().elem_type != GgufType::String)
    wrong_type(path(), key, v, "an array of string");
  std::vector<std::string> out;
  out.reserve(v.as_array().size());
  v.as_array().for_each([&](const GgufValue& e) { out.push_back(e.as_string()); });
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() != GgufType::Array) wrong_type(path(), key, v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(v.as_array().size());
  v.as_array().for_each([&](const GgufValue& e) {
    int64_t x;
    if (!int_of(e, &x)) wrong_type(path(), key, v, "an array of integers below 2^63");
    out.push_back(x);
  });
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufValue& v = value(key);
  if (v.type() != GgufType::Array ||
      (v.as_array().elem_type != GgufType::F32 && v.as_array().elem_type != GgufType::F64))
    wrong_type(path(), key, v, "an array of float32 or float64");
  std::vector<double> out;
  out.reserve(v.as_array().size());
  v.as_array().for_each([&](const GgufValue& e) { out.push_back(e.as_double()); });
  return out;
}

std::string GgufFile::get_string(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_string(key) : dflt;
}
int64_t GgufFile::get_int(const std::string& key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }
double GgufFile::get_float(const std::string& key, double dflt) const { return has(key) ? get_float(key) : dflt; }
bool GgufFile::get_bool(const std::string& key, bool dflt) const { return has(key) ? get_bool(key) : dflt; }

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->tensors; }
bool GgufFile::has_tensor(const std::string& name) const { return impl_->tensor_index.count(name) != 0; }

const GgufTensorInfo& GgufFile::tensor_info(const std::string& name) const {
  auto it = impl_->tensor_index.find(name);
  if (it == impl_->tensor_index.end()) fail_file(path(), "tensor " + q(name) + " is not in this file");
  return impl_->tensors[it->second];
}

bool GgufFile::has_tensor_data() const { return impl_->has_tensor_data; }

const uint8_t* GgufFile::tensor_data(const GgufTensorInfo& t) const {
  if (!impl_->has_tensor_data && !impl_->data_in_file(t))
    fail_file(path(), "tensor " + q(t.name) + ": its data is not in the file (it holds the header only, or is truncated)");
  return impl_->map.data() + impl_->data_offset + t.offset;
}

Tensor GgufFile::to_f32(const std::string& name) const { return to_f32(tensor_info(name)); }

Tensor GgufFile::to_f32(const GgufTensorInfo& t) const {
  if (!ggml_can_dequantize(t.type))
    fail_file(path(), "tensor " + q(t.name) + " has type " + ggml_type_name(t.type) +
                     ", which lmscope cannot dequantize (supported: " + ggml_dequantizable_types() + ")");
  const int64_t n = t.numel();
  void* src = const_cast<uint8_t*>(tensor_data(t));  // PROT_READ: views must not be written
  if (t.type == 0 && n > 0) return Tensor::view_or_copy(t.shape(), DType::F32, src, impl_);   // alignment 1, 2
  std::shared_ptr<float> buf(new float[size_t(std::max<int64_t>(n, 1))], std::default_delete<float[]>());
  dequantize(t.type, static_cast<const uint8_t*>(src), buf.get(), n);
  return Tensor::view(t.shape(), DType::F32, buf.get(), buf);
}

std::shared_ptr<void> GgufFile::owner() const { return impl_; }

bool is_gguf_file(const std::string& path) {
  struct stat st {};   // never open a FIFO (it would block) or a device to sniff it
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char m[4] = {};
  const bool ok = std::fread(m, 1, 4, f) == 4 && std::memcmp(m, "GGUF", 4) == 0;
  std::fclose(f);
  return ok;
}

}  // namespace lmscope
