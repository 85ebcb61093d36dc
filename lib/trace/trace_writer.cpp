#include "trace/trace_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>

#include "io/hdf5.h"
#include "io/output_target.h"
#include "trace/kv_rows.h"

namespace lmscope {

namespace fs = std::filesystem;

struct TraceWriter::State {
  h5::File file;
  h5::Group step;   // declared after file: closed before it
};

namespace {

// ---- Signals: SIGINT/SIGTERM/SIGHUP remove the temporaries of live writers ----------------
//
// The handler may only make async-signal-safe calls: it unlinks paths prepared in advance
// (fixed slots, armed with an atomic flag) and re-raises the signal with its default action,
// so the process still dies by it. Installed while at least one writer is alive, and only
// for a signal still at its default action (a program's own handler, or SIG_IGN under nohup,
// is left alone). SIGXFSZ is ignored meanwhile (if at its default): a file-size limit then
// fails the write with EFBIG, reported in one line, instead of killing the process.

constexpr int kSignalSlots = 32;          // live writers whose temporaries a signal removes
constexpr size_t kSlotPathMax = 4096;
struct SignalSlot {
  std::atomic<bool> armed{false};
  char path[kSlotPathMax];
};
SignalSlot g_slots[kSignalSlots];
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler reads these flags");

std::mutex g_mu;                    // guards everything below (never taken by the handler)
bool g_slot_used[kSignalSlots] = {};
int g_live_writers = 0;
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kNumCleanup = int(sizeof kCleanupSignals / sizeof kCleanupSignals[0]);
struct sigaction g_old_action[kNumCleanup];
bool g_installed[kNumCleanup] = {};
std::optional<FileSizeSignalIgnored> g_xfsz_ignored;

extern "C" void remove_temporaries_and_die(int sig) {
  for (SignalSlot& s : g_slots)
    if (s.armed.load(std::memory_order_acquire)) ::unlink(s.path);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);   // pending until this handler returns, then the default action ends the process
}

bool is_default(const struct sigaction& a) { return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL; }

void install_handlers_locked() {
  for (int i = 0; i < kNumCleanup; ++i) {
    struct sigaction cur;
    g_installed[i] = false;
    if (::sigaction(kCleanupSignals[i], nullptr, &cur) != 0 || !is_default(cur)) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_temporaries_and_die;
    sigemptyset(&sa.sa_mask);
    for (int s : kCleanupSignals) sigaddset(&sa.sa_mask, s);
    g_installed[i] = ::sigaction(kCleanupSignals[i], &sa, &g_old_action[i]) == 0;
  }
  g_xfsz_ignored.emplace();
}

void uninstall_handlers_locked() {
  for (int i = 0; i < kNumCleanup; ++i) {
    struct sigaction cur;
    // Put back the old action only if nobody replaced ours meanwhile.
    if (g_installed[i] && ::sigaction(kCleanupSignals[i], nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler == remove_temporaries_and_die)
      ::sigaction(kCleanupSignals[i], &g_old_action[i], nullptr);
    g_installed[i] = false;
  }
  g_xfsz_ignored.reset();
}

// A live writer; the slot (-1 when all are taken or the path is too long: then a signal
// leaves that temporary behind) is armed with the temporary's absolute path.
int register_writer(const std::string& abs_temp) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_live_writers++ == 0) install_handlers_locked();
  if (abs_temp.empty() || abs_temp.size() >= kSlotPathMax) return -1;
  for (int i = 0; i < kSignalSlots; ++i) {
    if (g_slot_used[i]) continue;
    g_slot_used[i] = true;
    std::memcpy(g_slots[i].path, abs_temp.c_str(), abs_temp.size() + 1);
    g_slots[i].armed.store(true, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_writer(int slot) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (slot >= 0) {
    g_slots[slot].armed.store(false, std::memory_order_release);
    g_slot_used[slot] = false;
  }
  if (--g_live_writers == 0) uninstall_handlers_locked();
}

// ---- Temporaries and locks -----------------------------------------------------------------

// `<out>.partial.<pid>.<16 hex digits>`: unique, so O_EXCL never meets another run's file.
std::string temp_name_for(const std::string& out_path) {
  static std::mutex mu;
  static std::mt19937_64 rng{[] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(::getpid());
  }()};
  uint64_t r;
  {
    std::lock_guard<std::mutex> lock(mu);
    r = rng();
  }
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".partial.%ld.%016llx", long(::getpid()), (unsigned long long)r);
  return out_path + suffix;
}

// Another process's live writer for out_path: the temporary whose OFD lock is held, or "".
// (A temporary without a lock is left by a killed run: ignored here, never touched.)
std::string live_writer_temp(const std::string& out_path) {
  fs::path p(out_path);
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".partial.";
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct flock fl;
    std::memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    bool locked = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    ::close(fd);
    if (locked) return it->path().string();
  }
  return "";
}

// An HDF5 failure while writing (a full disk) names the trace the user asked for, then the
// temporary and the object. Misuse (std::logic_error) passes through unchanged.
template <class F>
void name_the_trace(const std::string& out_path, F&& body) {
  try {
    body();
  } catch (const std::logic_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("cannot write trace '" + out_path + "': " + e.what());
  }
}

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
std::string in_quotes(const std::string& text) {
  std::string q = "'";
  q += text;
  q += '\'';
  return q;
}

// Why out_path cannot be written, or "" if it looks writable. Checked before HDF5 runs so
// the message is a plain reason ("directory 'x' does not exist") instead of HDF5's: what every
// writer refuses (io/output_target.h), and, since commit() renames over out_path, anything
// but an earlier trace (a config file or a weights file given by mistake).
std::string precheck(const std::string& out_path) {
  if (std::string why = output_target_problem(out_path); !why.empty()) return why;
  std::error_code ec;
  if (fs::exists(out_path, ec) && !is_trace_file(out_path)) return "it exists and is not an lmscope trace; not replacing it";
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

TraceWriter::TargetId TraceWriter::target_id(const std::string& path) {
  struct stat st;
  TraceWriter::TargetId id;
  if (::lstat(path.c_str(), &st) != 0) return id;
  id.exists = true;
  id.dev = uint64_t(st.st_dev);
  id.ino = uint64_t(st.st_ino);
  id.size = uint64_t(st.st_size);
  id.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

TraceWriter::TraceWriter(std::string out_path) : out_path_(std::move(out_path)) {
  if (std::string why = precheck(out_path_); !why.empty()) fail(why);
  if (std::string other = live_writer_temp(out_path_); !other.empty())
    fail("another process is writing this trace (its temporary " + in_quotes(other) +
         " is locked); not starting a second writer");
  target_at_start_ = target_id(out_path_);
  try {
    st_ = std::make_unique<State>();
    for (int attempt = 0;; ++attempt) {
      temp_path_ = temp_name_for(out_path_);
      std::error_code ec;
      fs::path abs = fs::absolute(temp_path_, ec);
      // Armed before the file exists: a signal in between unlinks a name nobody has.
      signal_slot_ = register_writer(ec ? std::string() : abs.string());
      registered_ = true;
      bool exists_already = false;
      try {
        st_->file = h5::File::create_new(temp_path_, &exists_already);
        created_ = true;
        break;
      } catch (const std::exception&) {
        unregister_writer(signal_slot_);
        signal_slot_ = -1;
        registered_ = false;
        if (!exists_already || attempt >= 8) throw;
      }
    }
    lock_fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (lock_fd_ >= 0) {   // best effort: without it a second writer is caught at commit()
      struct flock fl;
      std::memset(&fl, 0, sizeof fl);
      fl.l_type = F_WRLCK;
      fl.l_whence = SEEK_SET;
      ::fcntl(lock_fd_, F_OFD_SETLK, &fl);
    }
    // The attributes every trace has (tools set them again; commit() fills them in if a
    // caller removed them). A temporary left by SIGKILL or a crash is not a usable trace:
    // HDF5 writes its metadata at close, so it usually cannot even be opened.
    st_->file.root().set_attr("format", std::string("lmscope-trace"));
    st_->file.root().set_attr("format_version", kTraceFormatVersion);
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
  if (created_) ::unlink(temp_path_.c_str());   // never a file this writer did not make
  created_ = false;
  release_temp();
}

void TraceWriter::release_temp() noexcept {
  if (registered_) unregister_writer(signal_slot_);
  registered_ = false;
  signal_slot_ = -1;
  temp_path_.clear();
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

void TraceWriter::publish() {
  // The data must be on disk before the name points at it: after a power loss the path
  // must not hold a trace marked complete whose blocks never made it.
  int fd = lock_fd_ >= 0 ? lock_fd_ : ::open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0 && fd != lock_fd_) ::close(fd);
    throw std::runtime_error("cannot sync " + in_quotes(temp_path_) + " (" + std::strerror(e) + ")");
  }
  if (fd != lock_fd_) ::close(fd);
  const std::string changed = in_quotes(out_path_) +
                              " was written by another process while this trace was being made (two runs with "
                              "the same output?); not replacing it";
  auto rename_error = [&](int e) {
    return std::runtime_error("cannot rename " + in_quotes(temp_path_) + " (" + std::strerror(e) + ")");
  };
  if (!target_at_start_.exists) {
    // Nothing was there: RENAME_NOREPLACE makes "still nothing there" part of the rename.
    if (::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, out_path_.c_str(), RENAME_NOREPLACE) != 0) {
      int e = errno;
      if (e == EEXIST) throw std::runtime_error(changed);
      if (e != EINVAL && e != ENOSYS && e != ENOTSUP) throw rename_error(e);
      // A file system without RENAME_NOREPLACE: check, then rename.
      if (target_id(out_path_).exists) throw std::runtime_error(changed);
      if (::rename(temp_path_.c_str(), out_path_.c_str()) != 0) throw rename_error(errno);
    }
  } else {
    // An earlier trace is replaced only if it is still the one this writer started with.
    if (!(target_id(out_path_) == target_at_start_)) throw std::runtime_error(changed);
    if (::rename(temp_path_.c_str(), out_path_.c_str()) != 0) throw rename_error(errno);
  }
  // The rename itself reaches the disk with the directory (best effort: some file systems
  // refuse fsync on a directory).
  fs::path dir = fs::path(out_path_).parent_path();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void TraceWriter::set_root_attr(const std::string& key, const std::string& v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] { st_->file.root().set_attr(key, v); });
}
void TraceWriter::set_root_attr(const std::string& key, int64_t v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] { st_->file.root().set_attr(key, v); });
}
void TraceWriter::set_root_attr(const std::string& key, double v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] { st_->file.root().set_attr(key, v); });
}
void TraceWriter::set_root_attr(const std::string& key, const std::vector<int32_t>& v) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] { st_->file.root().set_attr(key, v); });
}

void TraceWriter::begin_step(const StepInfo& info) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  char name[32];
  std::snprintf(name, sizeof name, "step_%04d", info.step);
  st_->step = h5::Group();
  name_the_trace(out_path_, [&] {
    h5::Group g = st_->file.root().create_group(name);
    g.set_attr("step", int64_t(info.step));
    g.set_attr("phase", info.phase);
    g.set_attr("use_cache", int64_t(info.use_cache ? 1 : 0));
    g.set_attr("past_length", info.past_length);
    g.set_attr("T", info.T);
    g.set_attr("S", info.S);
    st_->step = std::move(g);
  });
  ++steps_begun_;
}

void TraceWriter::write_hook(const std::string& hook, const std::string& axes, const Shape& shape,
                             const void* data, bool is_int, int64_t kv_first_position) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  if (st_->step.id() < 0) throw std::logic_error("TraceWriter: write('" + hook + "') before begin_step");
  if (!valid_hook(hook)) throw std::invalid_argument("TraceWriter: bad hook name '" + hook + "'");
  if (count_axes(axes) != shape.size())
    throw std::logic_error("TraceWriter: hook '" + hook + "' axes '" + axes + "' do not match shape " + shape_str(shape));
  std::string path = hook;
  for (char& c : path) c = c == '.' ? '/' : c;
  size_t slash = path.rfind('/');
  std::string leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  name_the_trace(out_path_, [&] {
    h5::Group parent = st_->step.create_group(slash == std::string::npos ? "" : path.substr(0, slash));
    h5::Dataset ds = is_int ? parent.write_dataset(leaf, shape, static_cast<const int32_t*>(data), gzip_level_)
                            : parent.write_dataset(leaf, shape, static_cast<const float*>(data), gzip_level_);
    ds.set_attr("hook", hook);
    ds.set_attr("axes", axes);
    if (kv_first_position >= 0) {
      ds.set_attr("rows", std::string(kKvRowsAppended));
      ds.set_attr("first_position", kv_first_position);
    }
  });
}

void TraceWriter::write(const std::string& hook, const std::string& axes, const Shape& shape, const float* data) {
  write_hook(hook, axes, shape, data, false);
}
void TraceWriter::write(const std::string& hook, const std::string& axes, const Shape& shape, const int32_t* data) {
  write_hook(hook, axes, shape, data, true);
}
void TraceWriter::write_kv_rows(const std::string& hook, const Shape& shape, const float* data, int64_t first_position) {
  if (first_position < 0) throw std::logic_error("TraceWriter: negative first_position for '" + hook + "'");
  write_hook(hook, "B,Hkv,T,hd", shape, data, false, first_position);
}

void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, const std::string& v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  name_the_trace(out_path_, [&] { st_->step.create_group(group).set_attr(key, v); });
}
void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, int64_t v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  name_the_trace(out_path_, [&] { st_->step.create_group(group).set_attr(key, v); });
}
void TraceWriter::set_step_group_attr(const std::string& group, const std::string& key, double v) {
  if (!st_ || st_->step.id() < 0) throw std::logic_error("TraceWriter: set_step_group_attr before begin_step");
  name_the_trace(out_path_, [&] { st_->step.create_group(group).set_attr(key, v); });
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
  name_the_trace(out_path_, [&] { write_root(st_->file, name, shape, data); });
}
void TraceWriter::write_root_dataset(const std::string& name, const Shape& shape, const float* data) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] { write_root(st_->file, name, shape, data); });
}

void TraceWriter::write_root_strings(const std::string& name, const Shape& shape,
                                     const std::vector<std::string>& values) {
  if (!st_) throw std::logic_error("TraceWriter: already closed");
  name_the_trace(out_path_, [&] {
    size_t slash = name.rfind('/');
    h5::Group parent = st_->file.root().create_group(slash == std::string::npos ? "" : name.substr(0, slash));
    parent.write_strings(slash == std::string::npos ? name : name.substr(slash + 1), shape, values);
  });
}

void TraceWriter::commit() {
  if (!st_) throw std::logic_error("TraceWriter: commit() on a closed writer");
  try {
    h5::Group& root = st_->file.root();
    if (!root.has_attr("format")) root.set_attr("format", std::string("lmscope-trace"));
    if (!root.has_attr("format_version")) root.set_attr("format_version", kTraceFormatVersion);
    if (!root.has_attr("n_steps")) root.set_attr("n_steps", int64_t(steps_begun_));
    root.set_attr("complete", int64_t(1));   // last: a reader trusts nothing without it
    st_->step = h5::Group();
    st_->file.close();
    st_.reset();
    publish();
    created_ = false;   // it is out_path_ now
    committed_ = true;
    release_temp();
  } catch (const std::exception& e) {
    discard();
    fail(e.what());
  }
}

}  // namespace lmscope
