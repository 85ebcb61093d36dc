#include "trace/trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/hdf5.h"

namespace lmscope {

namespace fs = std::filesystem;

struct TraceWriter::State {
  h5::File file;
  h5::Group step;   // declared after file: closed before it
};

namespace {

// An HDF5 file whose root says format = lmscope-trace (complete or not).
bool is_trace_file(const std::string& path) {
  if (!h5::File::is_hdf5(path)) return false;
  try {
    h5::File f = h5::File::open_read(path);
    return f.root().has_attr("format") && f.root().attr_is_string("format") &&
           f.root().attr_string("format") == "lmscope-trace";
  } catch (const std::exception&) {
    return false;
  }
}

// 'text', built by appending: `"'" + std::string` trips GCC 12's bogus -Wrestrict.
std::string quoted(const std::string& text) {
  std::string q = "'";
  q += text;
  q += '\'';
  return q;
}

// Why out_path cannot be written, or "" if it looks writable. Checked before HDF5 runs so
// the message is a plain reason ("directory 'x' does not exist") instead of HDF5's.
std::string precheck(const std::string& out_path) {
  if (out_path.empty()) return "empty path";
  fs::path p(out_path);
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "directory " + quoted(dir.string()) + " does not exist";
  if (!fs::is_directory(dir, ec)) return quoted(dir.string()) + " is not a directory";
  if (fs::is_directory(p, ec)) return "it is a directory";
  if (::access(dir.c_str(), W_OK) != 0)
    return "directory " + quoted(dir.string()) + " is not writable (" + std::strerror(errno) + ")";
  // commit() renames over out_path, which as root would happily replace /dev/null, a
  // config file or a weights file given by mistake: only an earlier trace may be replaced.
  if (fs::exists(p, ec)) {
    if (!fs::is_regular_file(p, ec)) return "it exists and is not a regular file; not replacing it";
    if (!is_trace_file(out_path)) return "it exists and is not an lmscope trace; not replacing it";
  }
  fs::path partial(out_path + ".partial");
  if (fs::exists(fs::symlink_status(partial, ec)) && !fs::is_regular_file(fs::symlink_status(partial, ec)))
    return quoted(partial.string()) + " exists and is not a regular file";
  return "";
}

// Hook names become group paths: only [A-Za-z0-9_] components separated by single dots.
bool valid_hook(const std::string& hook) {
  if (hook.empty() || hook.front() == '.' || hook.back() == '.') return false;
  char prev = 0;
  for (char c : hook) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok || (c == '.' && prev == '.')) return false;
    prev = c;
  }
  return true;
}

size_t count_axes(const std::string& axes) {
  if (axes.empty()) return 0;
  size_t n = 1;
  for (char c : axes) n += c == ',';
  return n;
}

}  // namespace

TraceWriter::TraceWriter(std::string out_path) : out_path_(std::move(out_path)) {
  if (std::string why = precheck(out_path_); !why.empty()) fail(why);
  try {
    st_ = std::make_unique<State>();
    st_->file = h5::File::create(partial_path());
    created_ = true;
    // Written now (commit() only fills them in if a caller removed them) so that a partial
    // file left by a killed process is recognized as an incomplete trace, not as junk.
    st_->file.root().set_attr("format", std::string("lmscope-trace"));
    st_->file.root().set_attr("format_version", int64_t(1));
  } catch (const std::exception& e) {
    discard();
    fail(e.what());
  }
}

TraceWriter::~TraceWriter() {
  if (!committed_) discard();
}

void TraceWriter::fail(const std::string& what) const {
  throw std::runtime_error("cannot write trace '" + out_path_ + "': " + what);
}

void TraceWriter::discard() noexcept {
  st_.reset();   // closes every handle, then the file
  std::error_code ec;
  if (created_) fs::remove(partial_path(), ec);   // never a file this writer did not make
  created_ = false;
}

void TraceWriter::set_root_attr(const std::string& key, const std::string& v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  st_->file.root().set_attr(key, v);
}
void TraceWriter::set_root_attr(const std::string& key, int64_t v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  st_->file.root().set_attr(key, v);
}
void TraceWriter::set_root_attr(const std::string& key, double v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  st_->file.root().set_attr(key, v);
}
void TraceWriter::set_root_attr(const std::string& key, const std::vector<int32_t>& v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  st_->file.root().set_attr(key, v);
}

void TraceWriter::begin_step(const StepInfo& info) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  char name[32];
  std::snprintf(name, sizeof name, "step_%04d", info.step);
  st_->step = h5::Group();
  h5::Group g = st_->file.root().create_group(name);
  g.set_attr("step", int64_t(info.step));
  g.set_attr("phase", info.phase);
  g.set_attr("use_cache", int64_t(info.use_cache ? 1 : 0));
  g.set_attr("past_length", info.past_length);
  g.set_attr("T", info.T);
  g.set_attr("S", info.S);
  st_->step = std::move(g);
  ++steps_begun_;
}

void TraceWriter::write_hook(const std::string& hook, const std::string& axes, const Shape& shape,
                             const void* data, bool is_int) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  if (st_->step.id() < 0) throw std::logic_error("TraceWriter: write('" + hook + "') before begin_step");
  if (!valid_hook(hook)) throw std::invalid_argument("TraceWriter: bad hook name '" + hook + "'");
  if (count_axes(axes) != shape.size())
    throw std::logic_error("TraceWriter: hook '" + hook + "' axes '" + axes + "' do not match shape " + shape_str(shape));
  std::string path = hook;
  for (char& c : path) c = c == '.' ? '/' : c;
  size_t slash = path.rfind('/');
  h5::Group parent = st_->step.create_group(slash == std::string::npos ? "" : path.substr(0, slash));
  std::string leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  h5::Dataset ds = is_int ? parent.write_dataset(leaf, shape, static_cast<const int32_t*>(data), gzip_level_)
                          : parent.write_dataset(leaf, shape, static_cast<const float*>(data), gzip_level_);
  ds.set_attr("hook", hook);
  ds.set_attr("axes", axes);
}

void TraceWriter::write(const std::string& hook, const std::string& axes, const Shape& shape, const float* data) {
  write_hook(hook, axes, shape, data, false);
}
void TraceWriter::write(const std::string& hook, const std::string& axes, const Shape& shape, const int32_t* data) {
  write_hook(hook, axes, shape, data, true);
}

void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, const std::string& v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  st_->step.create_group(group).set_attr(key, v);
}
void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, int64_t v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  st_->step.create_group(group).set_attr(key, v);
}
void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, double v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  st_->step.create_group(group).set_attr(key, v);
}

namespace {
template <class T>
void write_root(h5::File& file, const std::string& name, const Shape& shape, const T* data) {
  size_t slash = name.rfind('/');
  h5::Group parent = file.root().create_group(slash == std::string::npos ? "" : name.substr(0, slash));
  parent.write_dataset(slash == std::string::npos ? name : name.substr(slash + 1), shape, data);
}
}  // namespace

void TraceWriter::write_root_dataset(const std::string& name, const Shape& shape, const int32_t* data) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  write_root(st_->file, name, shape, data);
}
void TraceWriter::write_root_dataset(const std::string& name, const Shape& shape, const float* data) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  write_root(st_->file, name, shape, data);
}

void TraceWriter::write_root_strings(const std::string& name, const Shape& shape,
                                     const std::vector<std::string>& values) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  size_t slash = name.rfind('/');
  h5::Group parent = st_->file.root().create_group(slash == std::string::npos ? "" : name.substr(0, slash));
  parent.write_strings(slash == std::string::npos ? name : name.substr(slash + 1), shape, values);
}

void TraceWriter::commit() {
  if (!st_) throw std::logic_error("TraceWriter: commit() on a closed writer");
  try {
    h5::Group& root = st_->file.root();
    if (!root.has_attr("format")) root.set_attr("format", std::string("lmscope-trace"));
    if (!root.has_attr("format_version")) root.set_attr("format_version", int64_t(1));
    if (!root.has_attr("n_steps")) root.set_attr("n_steps", int64_t(steps_begun_));
    root.set_attr("complete", int64_t(1));   // last: a reader trusts nothing without it
    st_->step = h5::Group();
    st_->file.close();
    st_.reset();
    std::error_code ec;
    fs::rename(partial_path(), out_path_, ec);
    if (ec) throw std::runtime_error("cannot rename '" + partial_path() + "' (" + ec.message() + ")");
    committed_ = true;
  } catch (const std::exception& e) {
    discard();
    fail(e.what());
  }
}

}  // namespace lmscope
