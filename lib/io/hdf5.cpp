#include "io/hdf5.h"
#include "io/hdf5_deadline.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace lmscope::h5 {

static_assert(std::is_same_v<hid_t, hid>, "hid must be hid_t (HDF5 >= 1.10)");

namespace {

// Stores that compress well and are big enough to matter: logits, scores, probs, kv.
constexpr size_t kCompressAbove = 64 * 1024;
constexpr size_t kTargetChunk = 1 << 20;   // ~1 MiB chunks: HDF5's recommended range
// deflate cannot expand data more than ~1032:1, so a filtered dataset whose shape claims
// more than this many times the bytes it stores is a lie, not a compressed array.
constexpr uint64_t kMaxExpansion = 1100;

// HDF5 registers H5_term_library with atexit() on its first call. After an H5Fclose that
// failed (a full disk, a file-size limit), 1.10 keeps a half-destroyed file in its handle
// table, and that exit handler closes it again: SIGSEGV after the one-line error was
// printed. Every file lmscope opens is closed by its RAII owner, so the handler has nothing
// to do: keep HDF5 from installing it (this runs before main, before any other HDF5 call).
const bool kNoAtexit = [] {
  H5dont_atexit();
  return true;
}();

// The most specific reason on HDF5's error stack ("No such file or directory", "file
// signature not found"), so the one-line message says why and not only what.
std::string h5_reason() {
  struct Acc { std::string desc; bool got = false; } acc;
  auto walk = [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
    auto* a = static_cast<Acc*>(data);
    if (n == 0 && e->desc) { a->desc = e->desc; a->got = true; }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &acc);
  H5Eclear2(H5E_DEFAULT);
  std::string d = acc.desc;
  // The low-level file driver's message carries errno text: keep only that part.
  const std::string key = "error message = '";
  if (size_t at = d.find(key); at != std::string::npos) {
    size_t end = d.find('\'', at + key.size());
    d = d.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
  }
  d.erase(std::remove(d.begin(), d.end(), '\n'), d.end());
  return d;
}

// Builds the one-line message now: the reason must be read before any handle is closed.
std::string h5_message(const std::string& file, const std::string& object, const std::string& what) {
  std::string msg = "HDF5 '" + file + "'";
  if (!object.empty()) msg += " " + object;
  msg += ": " + what;
  std::string why = h5_reason();
  if (!why.empty()) msg += " (" + why + ")";
  return msg;
}

[[noreturn]] void throw_h5(const std::string& file, const std::string& object, const std::string& what) {
  throw std::runtime_error(h5_message(file, object, what));
}

std::string join_path(const std::string& base, const std::string& rel) {
  if (base.empty() || base == "/") return "/" + rel;
  return base + "/" + rel;
}

std::vector<std::string> split_slash(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

Handle space_for(const Shape& shape) {
  if (shape.empty()) return Handle(H5Screate(H5S_SCALAR), H5Sclose);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Handle(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
}

// Chunk shape for a big dataset: the full shape, halving the leading axes until one chunk
// is about kTargetChunk bytes (leading axes are batch/head: a chunk stays a run of rows).
std::vector<hsize_t> chunk_dims(const Shape& shape, size_t elem) {
  std::vector<hsize_t> c(shape.begin(), shape.end());
  auto bytes = [&] {
    size_t b = elem;
    for (hsize_t d : c) b *= size_t(d);
    return b;
  };
  for (size_t i = 0; i < c.size() && bytes() > kTargetChunk; ++i) {
    while (c[i] > 1 && bytes() > kTargetChunk) c[i] = (c[i] + 1) / 2;
  }
  return c;
}

Handle attr_space_of(hid_t attr) { return Handle(H5Aget_space(attr), H5Sclose); }

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a float";
    case H5T_STRING: return "a string";
    case H5T_COMPOUND: return "a compound";
    case H5T_ENUM: return "an enum";
    case H5T_ARRAY: return "an array type";
    case H5T_VLEN: return "a variable-length sequence";
    case H5T_REFERENCE: return "a reference";
    case H5T_OPAQUE: return "opaque";
    case H5T_BITFIELD: return "a bitfield";
    case H5T_TIME: return "a time";
    default: return "of an unknown type";
  }
}

// The size of the file that holds obj: no attribute or dataset in it stores more bytes.
// 0 when it cannot be found (every size check then fails, which is the safe side).
uint64_t file_size_of(hid_t obj) {
  Handle f(H5Iget_file_id(obj), H5Fclose);
  hsize_t size = 0;
  if (!f.valid() || H5Fget_filesize(f.get(), &size) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  return size;
}

// a * b, or false on overflow
bool mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

}  // namespace

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// ---- Handle ---------------------------------------------------------------------------

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_) {
    closer_(id_);
    H5Eclear2(H5E_DEFAULT);   // a failed close must not leak into the next error message
  }
  id_ = -1;
}

int Handle::close() {
  int status = 0;
  if (id_ >= 0 && closer_) status = closer_(id_);
  id_ = -1;
  return status;
}

// ---- Object: attributes ---------------------------------------------------------------

void Object::fail(const std::string& what) const { throw_h5(file_, name_, what); }

std::string Object::identity() const {
  const ReadDeadline deadline(file_);
  std::string key;
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  if (H5Oget_info3(id(), &info, H5O_INFO_BASIC) < 0) fail("cannot get object info");
  key.append(reinterpret_cast<const char*>(&info.fileno), sizeof info.fileno);
  key.append(reinterpret_cast<const char*>(&info.token), sizeof info.token);
#else
  H5O_info_t info;
  if (H5Oget_info2(id(), &info, H5O_INFO_BASIC) < 0) fail("cannot get object info");
  key.append(reinterpret_cast<const char*>(&info.fileno), sizeof info.fileno);
  key.append(reinterpret_cast<const char*>(&info.addr), sizeof info.addr);
#endif
  return key;
}

namespace {
// Writes (replacing) one attribute; the caller provides the file type and memory type.
void write_attr(const Object& obj, const std::string& key, hid_t ftype, hid_t mtype,
                const Shape& shape, const void* buf, std::string& err) {
  if (H5Aexists(obj.id(), key.c_str()) > 0 && H5Adelete(obj.id(), key.c_str()) < 0) {
    err = "cannot replace attribute '" + key + "'";
    return;
  }
  Handle space = space_for(shape);
  Handle a(H5Acreate2(obj.id(), key.c_str(), ftype, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid() || H5Awrite(a.get(), mtype, buf) < 0) err = "cannot write attribute '" + key + "'";
}
}  // namespace

void Object::set_attr(const std::string& key, const std::string& v) {
  // Variable-length UTF-8: what h5py writes for a str, so Python reads it back as str.
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  const char* p = v.c_str();
  std::string err;
  write_attr(*this, key, t.get(), t.get(), {}, &p, err);
  if (!err.empty()) fail(err);
}

void Object::set_attr(const std::string& key, int64_t v) {
  std::string err;
  write_attr(*this, key, H5T_STD_I64LE, H5T_NATIVE_INT64, {}, &v, err);
  if (!err.empty()) fail(err);
}

void Object::set_attr(const std::string& key, double v) {
  std::string err;
  write_attr(*this, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {}, &v, err);
  if (!err.empty()) fail(err);
}

void Object::set_attr(const std::string& key, const std::vector<int32_t>& v) {
  std::string err;
  write_attr(*this, key, H5T_STD_I32LE, H5T_NATIVE_INT32, {int64_t(v.size())}, v.data(), err);
  if (!err.empty()) fail(err);
}

bool Object::has_attr(const std::string& key) const {
  const ReadDeadline deadline(file_);
  htri_t r = H5Aexists(id(), key.c_str());
  if (r < 0) fail("cannot look up attribute '" + key + "'");
  return r > 0;
}

std::vector<std::string> Object::attr_names() const {
  const ReadDeadline deadline(file_);
  std::vector<std::string> names;
  hsize_t idx = 0;
  auto cb = [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  if (H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names) < 0)
    fail("cannot list attributes");
  return names;
}

namespace {
Handle open_attr(const Object& obj, const std::string& key) {
  if (H5Aexists(obj.id(), key.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw std::runtime_error("HDF5 '" + obj.file_path() + "' " + obj.name() + ": no attribute '" + key + "'");
  }
  return Handle(H5Aopen(obj.id(), key.c_str(), H5P_DEFAULT), H5Aclose);
}
H5T_class_t attr_class(const Object& obj, const std::string& key) {
  const ReadDeadline deadline(obj.file_path());
  Handle a = open_attr(obj, key);
  Handle t(H5Aget_type(a.get()), H5Tclose);
  return t.valid() ? H5Tget_class(t.get()) : H5T_NO_CLASS;
}

// The number of elements of attribute `a` (file type ft), checked against the file's size:
// attribute values are stored raw, so more bytes than the file has is a corrupt header.
size_t attr_points(const Object& obj, hid_t a, hid_t ft, const std::string& key) {
  Handle sp = attr_space_of(a);
  hssize_t n = sp.valid() ? H5Sget_simple_extent_npoints(sp.get()) : -1;
  if (n < 0) throw_h5(obj.file_path(), obj.name(), "cannot get the dataspace of attribute '" + key + "'");
  uint64_t bytes = 0;
  if (!mul(uint64_t(n), H5Tget_size(ft), bytes) || bytes > file_size_of(obj.id()))
    throw std::runtime_error("HDF5 '" + obj.file_path() + "' " + obj.name() + ": attribute '" + key + "' claims " +
                             std::to_string(n) + " elements, more than the file holds");
  return size_t(n);
}
}  // namespace

bool Object::attr_is_string(const std::string& key) const { return attr_class(*this, key) == H5T_STRING; }
bool Object::attr_is_int(const std::string& key) const { return attr_class(*this, key) == H5T_INTEGER; }

std::string Object::attr_string(const std::string& key) const {
  const ReadDeadline deadline(file_);
  Handle a = open_attr(*this, key);
  if (!a.valid()) fail("cannot open attribute '" + key + "'");
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  if (!ft.valid()) fail("cannot get the type of attribute '" + key + "'");
  H5T_class_t c = H5Tget_class(ft.get());
  if (c != H5T_STRING) fail("attribute '" + key + "' is " + class_name(c) + ", not a string");
  // H5Aread writes every element: an array of k strings into one char* overflows it.
  Handle sp = attr_space_of(a.get());
  H5S_class_t sc = sp.valid() ? H5Sget_simple_extent_type(sp.get()) : H5S_NO_CLASS;
  hssize_t n_el = sp.valid() ? H5Sget_simple_extent_npoints(sp.get()) : -1;
  if ((sc != H5S_SCALAR && sc != H5S_SIMPLE) || n_el != 1)
    fail("attribute '" + key + "' is not a single string (" +
         (sc == H5S_NULL ? std::string("no value") : std::to_string(n_el) + " elements") + ")");
  attr_points(*this, a.get(), ft.get(), key);   // a fixed length beyond the file's size
  if (H5Tis_variable_str(ft.get()) > 0) {
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), H5T_VARIABLE);
    H5Tset_cset(mt.get(), H5Tget_cset(ft.get()));
    char* p = nullptr;
    if (H5Aread(a.get(), mt.get(), &p) < 0) fail("cannot read attribute '" + key + "'");
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  // Fixed length (numpy 'S' strings): read the bytes and drop the NUL padding.
  size_t n = H5Tget_size(ft.get());
  std::string s(n, '\0');
  if (n > 0 && H5Aread(a.get(), ft.get(), s.data()) < 0) fail("cannot read attribute '" + key + "'");
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::vector<double> Object::attr_doubles(const std::string& key) const {
  const ReadDeadline deadline(file_);
  Handle a = open_attr(*this, key);
  if (!a.valid()) fail("cannot open attribute '" + key + "'");
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  H5T_class_t c = H5Tget_class(ft.get());
  if (c != H5T_INTEGER && c != H5T_FLOAT) fail("attribute '" + key + "' is " + class_name(c) + ", not numeric");
  size_t n = attr_points(*this, a.get(), ft.get(), key);
  std::vector<double> v(n);
  if (n > 0 && H5Aread(a.get(), H5T_NATIVE_DOUBLE, v.data()) < 0) fail("cannot read attribute '" + key + "'");
  return v;
}

int64_t Object::attr_int(const std::string& key) const {
  const ReadDeadline deadline(file_);
  Handle a = open_attr(*this, key);
  if (!a.valid()) fail("cannot open attribute '" + key + "'");
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  H5T_class_t c = H5Tget_class(ft.get());
  if (c != H5T_INTEGER && c != H5T_FLOAT) fail("attribute '" + key + "' is " + class_name(c) + ", not numeric");
  if (attr_points(*this, a.get(), ft.get(), key) != 1) fail("attribute '" + key + "' is not a single number");
  if (c == H5T_FLOAT) {
    // A NaN, an infinity or 1e30 has no int64 value (the cast would be undefined behaviour).
    const double d = attr_doubles(key)[0];
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::floor(d))
      fail("attribute '" + key + "' is " + std::to_string(d) + ", not an integer");
    return int64_t(d);
  }
  int64_t v = 0;   // read as int64 directly: doubles lose ids above 2^53
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) fail("cannot read attribute '" + key + "'");
  return v;
}

double Object::attr_double(const std::string& key) const {
  std::vector<double> v = attr_doubles(key);
  if (v.size() != 1) fail("attribute '" + key + "' is not a single number");
  return v[0];
}

std::vector<int32_t> Object::attr_ints(const std::string& key) const {
  const ReadDeadline deadline(file_);
  Handle a = open_attr(*this, key);
  if (!a.valid()) fail("cannot open attribute '" + key + "'");
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(ft.get()) != H5T_INTEGER) fail("attribute '" + key + "' is not an integer array");
  size_t n = attr_points(*this, a.get(), ft.get(), key);
  std::vector<int32_t> v(n);
  if (n > 0 && H5Aread(a.get(), H5T_NATIVE_INT32, v.data()) < 0) fail("cannot read attribute '" + key + "'");
  return v;
}

// ---- Dataset ---------------------------------------------------------------------------

Shape Dataset::shape() const {
  const ReadDeadline deadline(file_);
  Handle sp(H5Dget_space(id()), H5Sclose);
  if (!sp.valid()) fail("cannot get dataspace");
  if (H5Sget_simple_extent_type(sp.get()) == H5S_NULL) fail("has a null dataspace (no value)");
  int nd = H5Sget_simple_extent_ndims(sp.get());
  if (nd < 0) fail("cannot get rank");
  std::vector<hsize_t> dims(nd);
  if (H5Sget_simple_extent_dims(sp.get(), dims.data(), nullptr) < 0) fail("cannot get dimensions");
  uint64_t total = 1;
  for (hsize_t d : dims)
    if (!mul(total, d, total) || total > uint64_t(INT64_MAX)) fail("has a shape whose size overflows");
  return Shape(dims.begin(), dims.end());
}

size_t Dataset::checked_numel(size_t file_elem_bytes) const {
  Shape s = shape();
  uint64_t n = uint64_t(shape_numel(s)), bytes = 0;
  if (!mul(n, file_elem_bytes, bytes)) fail("has a shape whose size overflows");
  if (bytes == 0) return size_t(n);
  // What the file really stores for it: nothing for a dataset that was never written, a
  // compressed stream for a filtered one (bounded by deflate's best ratio).
  uint64_t stored = std::min<uint64_t>(H5Dget_storage_size(id()), file_size_of(id()));
  Handle dcpl(H5Dget_create_plist(id()), H5Pclose);
  int nfilters = dcpl.valid() ? H5Pget_nfilters(dcpl.get()) : 0;
  uint64_t limit = stored;
  if (nfilters > 0 && !mul(stored, kMaxExpansion, limit)) limit = UINT64_MAX;
  if (bytes > limit)
    fail("shape " + shape_str(s) + " needs " + std::to_string(bytes) + " bytes but the file stores " +
         std::to_string(stored) + (nfilters > 0 ? " (compressed)" : "") + " for it");
  return size_t(n);
}

bool Dataset::is_int() const {
  const ReadDeadline deadline(file_);
  Handle t(H5Dget_type(id()), H5Tclose);
  if (!t.valid()) fail("cannot get type");
  return H5Tget_class(t.get()) == H5T_INTEGER;
}

DatasetData Dataset::read() const {
  const ReadDeadline deadline(file_);
  Handle ft(H5Dget_type(id()), H5Tclose);
  if (!ft.valid()) fail("cannot get type");
  H5T_class_t c = H5Tget_class(ft.get());
  if (c != H5T_INTEGER && c != H5T_FLOAT) fail("is " + std::string(class_name(c)) + " dataset, not numeric");
  DatasetData d;
  size_t n = checked_numel(H5Tget_size(ft.get()));
  d.shape = shape();
  d.is_int = c == H5T_INTEGER;
  try {
    d.values.resize(n);
  } catch (const std::exception&) {
    fail("shape " + shape_str(d.shape) + " does not fit in memory");
  }
  if (!d.values.empty() && H5Dread(id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()) < 0)
    fail("cannot read dataset");
  return d;
}

std::vector<std::string> Dataset::read_strings() const {
  const ReadDeadline deadline(file_);
  Handle ft(H5Dget_type(id()), H5Tclose);
  if (!ft.valid() || H5Tget_class(ft.get()) != H5T_STRING) fail("is not a string dataset");
  size_t n = checked_numel(H5Tget_size(ft.get()));
  std::vector<std::string> out;
  if (n == 0) return out;
  if (H5Tis_variable_str(ft.get()) > 0) {
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), H5T_VARIABLE);
    H5Tset_cset(mt.get(), H5Tget_cset(ft.get()));
    std::vector<char*> ptrs(n, nullptr);
    if (H5Dread(id(), mt.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) fail("cannot read strings");
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    Handle space(H5Dget_space(id()), H5Sclose);
    H5Dvlen_reclaim(mt.get(), space.get(), H5P_DEFAULT, ptrs.data());
    return out;
  }
  size_t len = H5Tget_size(ft.get());
  std::vector<char> buf(n * len);
  if (H5Dread(id(), ft.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) fail("cannot read strings");
  for (size_t i = 0; i < n; ++i) {
    std::string v(buf.data() + i * len, len);
    v.erase(std::find(v.begin(), v.end(), '\0'), v.end());
    out.push_back(std::move(v));
  }
  return out;
}

// ---- Group -----------------------------------------------------------------------------

std::string Group::child_name(const std::string& path) const { return join_path(name_, path); }

Group Group::create_group(const std::string& path) {
  std::string cur = name_;
  Handle parent;   // invalid -> use this group's id
  for (const std::string& part : split_slash(path)) {
    hid_t pid = parent.valid() ? parent.get() : id();
    cur = join_path(cur, part);
    htri_t ex = H5Lexists(pid, part.c_str(), H5P_DEFAULT);
    Handle g = ex > 0 ? Handle(H5Gopen2(pid, part.c_str(), H5P_DEFAULT), H5Gclose)
                      : Handle(H5Gcreate2(pid, part.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.valid()) throw_h5(file_, cur, ex > 0 ? "cannot open group" : "cannot create group");
    parent = std::move(g);
  }
  if (!parent.valid()) {   // empty path: a second handle to this group
    Handle g(H5Gopen2(id(), ".", H5P_DEFAULT), H5Gclose);
    if (!g.valid()) fail("cannot reopen group");
    return Group(std::move(g), file_, name_);
  }
  return Group(std::move(parent), file_, cur);
}

Group Group::open_group(const std::string& path) const {
  const ReadDeadline deadline(file_);
  std::string full = child_name(path);
  if (!exists(path)) throw std::runtime_error("HDF5 '" + file_ + "': no group " + full);
  Handle g(H5Gopen2(id(), path.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_h5(file_, full, "cannot open group");
  return Group(std::move(g), file_, full);
}

bool Group::exists(const std::string& path) const {
  const ReadDeadline deadline(file_);
  // H5Lexists on "a/b" fails (rather than returning false) when "a" is missing: walk it.
  std::string cur;
  for (const std::string& part : split_slash(path)) {
    cur = cur.empty() ? part : cur + "/" + part;
    htri_t r = H5Lexists(id(), cur.c_str(), H5P_DEFAULT);
    if (r <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return !cur.empty();
}

ChildKind Group::kind(const std::string& path) const {
  const ReadDeadline deadline(file_);
  H5L_info_t link{};
  if (H5Lget_info(id(), path.c_str(), &link, H5P_DEFAULT) >= 0 && link.type == H5L_TYPE_EXTERNAL)
    return ChildKind::ExternalLink;
  H5Eclear2(H5E_DEFAULT);
  // H5Oopen + H5Iget_type: the same call in HDF5 1.10 and 1.12 (H5O_info_t changed).
  Handle o(H5Oopen(id(), path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.valid()) throw_h5(file_, child_name(path), "cannot open object");
  H5I_type_t t = H5Iget_type(o.get());
  if (t == H5I_GROUP) return ChildKind::Group;
  if (t == H5I_DATASET) return ChildKind::Dataset;
  return ChildKind::Other;
}

std::vector<std::string> Group::children() const {
  const ReadDeadline deadline(file_);
  std::vector<std::string> names;
  hsize_t idx = 0;
  auto cb = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  if (H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names) < 0) fail("cannot list group");
  return names;
}

Dataset Group::write_raw(const std::string& name, const Shape& shape, const void* data, bool is_int,
                         int gzip_level) {
  std::string full = child_name(name);
  for (int64_t d : shape)
    if (d < 0) throw std::runtime_error("HDF5 '" + file_ + "' " + full + ": negative dimension in " + shape_str(shape));
  Handle space = space_for(shape);
  if (!space.valid()) throw_h5(file_, full, "cannot create dataspace " + shape_str(shape));
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  size_t bytes = size_t(shape_numel(shape)) * 4;
  if (gzip_level > 0 && !shape.empty() && bytes > kCompressAbove) {
    std::vector<hsize_t> chunk = chunk_dims(shape, 4);
    if (H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data()) < 0) throw_h5(file_, full, "cannot set chunking");
    // Shuffle groups the bytes of each float by significance: gzip then does much better.
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
      H5Pset_shuffle(dcpl.get());
      H5Pset_deflate(dcpl.get(), unsigned(std::min(gzip_level, 9)));
    }
  }
  hid_t ftype = is_int ? H5T_STD_I32LE : H5T_IEEE_F32LE;
  hid_t mtype = is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
  Handle ds(H5Dcreate2(id(), name.c_str(), ftype, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw_h5(file_, full, "cannot create dataset");
  if (bytes > 0 && H5Dwrite(ds.get(), mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    throw_h5(file_, full, "cannot write dataset");
  return Dataset(std::move(ds), file_, full);
}

Dataset Group::write_dataset(const std::string& name, const Shape& shape, const float* data, int gzip_level) {
  return write_raw(name, shape, data, false, gzip_level);
}
Dataset Group::write_dataset(const std::string& name, const Shape& shape, const int32_t* data, int gzip_level) {
  return write_raw(name, shape, data, true, gzip_level);
}

Dataset Group::write_strings(const std::string& name, const Shape& shape, const std::vector<std::string>& values) {
  std::string full = child_name(name);
  if (shape.size() > 1 || size_t(shape_numel(shape)) != values.size())
    throw std::runtime_error("HDF5 '" + file_ + "' " + full + ": " + std::to_string(values.size()) +
                             " strings do not fill shape " + shape_str(shape));
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  Handle space = space_for(shape);
  if (!space.valid()) throw_h5(file_, full, "cannot create dataspace " + shape_str(shape));
  Handle ds(H5Dcreate2(id(), name.c_str(), t.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw_h5(file_, full, "cannot create dataset");
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const std::string& v : values) ptrs.push_back(v.c_str());
  if (!ptrs.empty() && H5Dwrite(ds.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
    throw_h5(file_, full, "cannot write dataset");
  return Dataset(std::move(ds), file_, full);
}

Dataset Group::open_dataset(const std::string& path) const {
  const ReadDeadline deadline(file_);
  std::string full = child_name(path);
  if (!exists(path)) throw std::runtime_error("HDF5 '" + file_ + "': no dataset " + full);
  Handle d(H5Dopen2(id(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) throw_h5(file_, full, "cannot open dataset");
  return Dataset(std::move(d), file_, full);
}

// ---- File ------------------------------------------------------------------------------

namespace {
// Strong close degree: H5Fclose really closes the OS file even if an object handle leaked,
// so a rename or remove right after close() acts on a closed file.
Handle strong_fapl() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  return fapl;
}
}  // namespace

File File::create(const std::string& path) {
  silence_errors();
  Handle fapl = strong_fapl();
  Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!f.valid()) throw_h5(path, "", "cannot create file");
  Handle g(H5Gopen2(f.get(), "/", H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_h5(path, "/", "cannot open root group");
  return File(std::move(f), Group(std::move(g), path, "/"), path);
}

File File::create_new(const std::string& path, bool* exists_already) {
  silence_errors();
  if (exists_already) *exists_already = false;
  Handle fapl = strong_fapl();
  Handle f(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!f.valid()) {
    std::string msg = h5_message(path, "", "cannot create file");
    struct stat st;
    if (exists_already && ::lstat(path.c_str(), &st) == 0) *exists_already = true;
    throw std::runtime_error(msg);
  }
  Handle g(H5Gopen2(f.get(), "/", H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_h5(path, "/", "cannot open root group");
  return File(std::move(f), Group(std::move(g), path, "/"), path);
}

File File::open_read(const std::string& path) {
  const ReadDeadline deadline(path);
  silence_errors();
  Handle fapl = strong_fapl();
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!f.valid()) throw_h5(path, "", "cannot open file");
  Handle g(H5Gopen2(f.get(), "/", H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_h5(path, "/", "cannot open root group");
  return File(std::move(f), Group(std::move(g), path, "/"), path);
}

bool File::is_hdf5(const std::string& path) {
  const ReadDeadline deadline(path);
  silence_errors();
  htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

void File::close() {
  if (!file_.valid()) return;
  root_ = Group();
  if (H5Fflush(file_.get(), H5F_SCOPE_LOCAL) < 0) {
    std::string msg = h5_message(path_, "", "cannot flush file");
    file_.reset();
    throw std::runtime_error(msg);
  }
  if (file_.close() < 0) throw_h5(path_, "", "cannot close file");
}

}  // namespace lmscope::h5
