// The CUDA runtime functions lmscope's CUDA backend calls, defined over host memory (the
// declarations are NVIDIA's, from cuda_runtime_api.h). One emulated device, "sm_90" with the
// H200's 132 multiprocessors (so that launch planning takes the same decisions as on the GPU
// the project targets). Work is run when it is queued (streams are in order anyway), except
// while a stream is captured: then it is recorded, and runs when the graph is launched.
//
// What is checked, as a GPU would not: every copy's ranges lie inside allocations of the kinds
// its cudaMemcpyKind names; a captured copy touches only pinned or device memory; nothing
// synchronizes during a capture; new device memory is filled with NaN (0xFF bytes), so an
// element read before any kernel wrote it shows.
#include <cuda_runtime.h>
#include <sys/sysinfo.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "cuda_emulator/runtime_state.h"

struct CUstream_st {
  bool capturing = false;
  bool capture_invalid = false;
  std::vector<lmscope::cuda_emu::Work> captured;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};
struct CUgraph_st {
  std::vector<lmscope::cuda_emu::Work> work;
};
struct CUgraphExec_st {
  std::vector<lmscope::cuda_emu::Work> work;
};

namespace lmscope::cuda_emu {

namespace {

std::mutex mu;
std::map<const char*, std::pair<size_t, MemoryKind>> allocations;   // base -> (size, kind)
thread_local cudaError_t last_error = cudaSuccess;
thread_local std::string last_report;
thread_local cudaError_t last_report_code = cudaSuccess;   // the error last_report is about
CUstream_st legacy_stream;   // stream 0
std::set<cudaStream_t> streams;

CUstream_st* stream_of(cudaStream_t st) { return st ? st : &legacy_stream; }

cudaError_t allocate(void** p, size_t bytes, MemoryKind kind) {
  if (!p) return fail(cudaErrorInvalidValue, "allocation with a null result pointer");
  void* q = nullptr;
  if (posix_memalign(&q, 256, bytes ? bytes : 1) != 0) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation, "out of host memory for " + std::to_string(bytes) + " bytes");
  }
  if (kind == MemoryKind::Device) std::memset(q, 0xFF, bytes);   // NaN: unwritten memory shows
  std::lock_guard<std::mutex> lock(mu);
  allocations[static_cast<const char*>(q)] = {bytes ? bytes : 1, kind};
  *p = q;
  return cudaSuccess;
}

cudaError_t release(void* p, MemoryKind kind, const char* call) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  auto it = allocations.find(static_cast<const char*>(p));
  if (it == allocations.end() || it->second.second != kind)
    return fail(cudaErrorInvalidValue, std::string(call) + " of a pointer it did not allocate");
  allocations.erase(it);
  std::free(p);
  return cudaSuccess;
}

bool capturing_any() {
  if (legacy_stream.capturing) return true;
  for (cudaStream_t s : streams)
    if (s->capturing) return true;
  return false;
}

// A synchronizing call while a stream is captured: CUDA refuses it and invalidates the capture.
cudaError_t refuse_during_capture(const char* call) {
  for (cudaStream_t s : streams) s->capture_invalid |= s->capturing;
  legacy_stream.capture_invalid |= legacy_stream.capturing;
  return fail(cudaErrorStreamCaptureUnsupported, std::string(call) + " while a stream is being captured");
}

const char* kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    default: return "cudaMemcpyDefault";
  }
}

// One side of a copy: a range that must lie inside a device allocation (device = true) or
// outside every device allocation; while capturing, host memory must be pinned.
std::string check_side(const char* side, const void* p, size_t bytes, bool device, bool capturing) {
  Allocation a;
  const bool inside = find_allocation(p, bytes, &a);
  if (device) {
    if (!inside || a.kind != MemoryKind::Device)
      return std::string(side) + " [" + std::to_string(reinterpret_cast<uintptr_t>(p)) + ", +" + std::to_string(bytes) +
             ") is not inside one device allocation";
    return "";
  }
  if (inside && a.kind == MemoryKind::Device) return std::string(side) + " is device memory";
  if (is_device_pointer(p)) return std::string(side) + " starts in device memory and runs past its end";
  if (capturing && !(inside && a.kind == MemoryKind::Pinned))
    return std::string(side) + " is pageable host memory, which a graph capture cannot record";
  return "";
}

cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind, cudaStream_t st, const char* call) {
  if (height == 0 || width == 0) return cudaSuccess;
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidPitchValue, std::string(call) + ": width " + std::to_string(width) + " > a pitch");
  const bool capturing = stream_of(st)->capturing;
  const size_t dext = dpitch * (height - 1) + width, sext = spitch * (height - 1) + width;
  bool dst_dev, src_dev;
  switch (kind) {
    case cudaMemcpyHostToDevice: dst_dev = true, src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false, src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    default: dst_dev = is_device_pointer(dst), src_dev = is_device_pointer(src); break;
  }
  std::string why = check_side("destination", dst, dext, dst_dev, capturing);
  if (why.empty()) why = check_side("source", src, sext, src_dev, capturing);
  if (!why.empty()) return fail(cudaErrorInvalidValue, std::string(call) + " (" + kind_name(kind) + "): " + why);
  return submit(st, Work{"memcpy", [=]() -> cudaError_t {
                           for (size_t r = 0; r < height; ++r)
                             std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                                          width);
                           return cudaSuccess;
                         }});
}

cudaError_t memset_device(void* p, int value, size_t bytes, cudaStream_t st, const char* call) {
  if (bytes == 0) return cudaSuccess;
  Allocation a;
  if (!find_allocation(p, bytes, &a) || a.kind != MemoryKind::Device)
    return fail(cudaErrorInvalidValue, std::string(call) + ": the range is not inside one device allocation");
  return submit(st, Work{"memset", [=]() -> cudaError_t {
                           std::memset(p, value, bytes);
                           return cudaSuccess;
                         }});
}

}  // namespace

bool find_allocation(const void* p, size_t bytes, Allocation* out) {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(mu);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin()) return false;
  --it;
  const size_t off = size_t(c - it->first);
  if (off >= it->second.first || bytes > it->second.first - off) return false;
  if (out) *out = Allocation{it->first, it->second.first, it->second.second};
  return true;
}

bool is_device_pointer(const void* p) {
  Allocation a;
  return find_allocation(p, 1, &a) && a.kind == MemoryKind::Device;
}

cudaError_t fail(cudaError_t e, const std::string& report) {
  last_error = e;
  last_report = report;
  last_report_code = e;
  return e;
}

cudaError_t submit(cudaStream_t st, Work w) {
  CUstream_st* s = stream_of(st);
  if (s->capturing) {
    s->captured.push_back(std::move(w));
    return cudaSuccess;
  }
  return w.run();
}

}  // namespace lmscope::cuda_emu

using namespace lmscope::cuda_emu;

extern "C" {

// ---- errors ----------------------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue: return "cudaErrorInvalidPitchValue";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorGraphExecUpdateFailure: return "cudaErrorGraphExecUpdateFailure";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
  }
}

// The emulator's own report when it is about the error asked for (it names the kernel, the
// block and the threads); otherwise the error's name.
const char* cudaGetErrorString(cudaError_t e) {
  if (e == cudaSuccess) return "no error";
  static thread_local std::string text;
  text = (e == last_report_code && !last_report.empty()) ? "(lmscope CUDA emulator) " + last_report : cudaGetErrorName(e);
  return text.c_str();
}

// ---- device ------------------------------------------------------------------------------------
// LMSCOPE_CUDA_EMULATOR_DEVICES=0 hides the device, as a machine without a GPU (or without a
// driver) does: the tests of the no-device paths run in the emulated build too.
cudaError_t cudaGetDeviceCount(int* n) {
  const char* devices = std::getenv("LMSCOPE_CUDA_EMULATOR_DEVICES");
  if (devices && std::strcmp(devices, "0") == 0) {
    *n = 0;
    return fail(cudaErrorNoDevice, "no CUDA-capable device is detected (LMSCOPE_CUDA_EMULATOR_DEVICES=0)");
  }
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(device) + ")");
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties of device " + std::to_string(device));
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "lmscope CUDA emulator (CPU)");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  struct sysinfo si;
  prop->totalGlobalMem = sysinfo(&si) == 0 ? size_t(si.totalram) * si.mem_unit : size_t(1) << 34;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!func) return fail(cudaErrorInvalidDeviceFunction, "cudaFuncGetAttributes of a null function");
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->ptxVersion = attr->binaryVersion = 90;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  if (capturing_any()) return refuse_during_capture("cudaDeviceSynchronize");
  return cudaSuccess;
}

// ---- memory ------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::Device); }
cudaError_t cudaFree(void* p) {
  if (capturing_any()) return refuse_during_capture("cudaFree");
  return release(p, MemoryKind::Device, "cudaFree");
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) { return allocate(p, bytes, MemoryKind::Pinned); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::Pinned); }
cudaError_t cudaFreeHost(void* p) { return release(p, MemoryKind::Pinned, "cudaFreeHost"); }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (capturing_any()) return refuse_during_capture("cudaMemcpy");
  return copy_2d(dst, n, src, n, n, 1, kind, nullptr, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t st) {
  return copy_2d(dst, n, src, n, n, 1, kind, st, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t st) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, st, "cudaMemcpy2DAsync");
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
  if (capturing_any()) return refuse_during_capture("cudaMemset");
  return memset_device(p, value, n, nullptr, "cudaMemset");
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t st) {
  return memset_device(p, value, n, st, "cudaMemsetAsync");
}

// ---- streams and events --------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* st, unsigned int) {
  *st = new CUstream_st;
  std::lock_guard<std::mutex> lock(mu);
  streams.insert(*st);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* st) { return cudaStreamCreateWithFlags(st, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t st) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!streams.erase(st)) return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy of an unknown stream");
  }
  delete st;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t st) {
  if (stream_of(st)->capturing || capturing_any()) return refuse_during_capture("cudaStreamSynchronize");
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
  return submit(st, Work{"event", [e]() -> cudaError_t {
                           e->at = std::chrono::steady_clock::now();
                           e->recorded = true;
                           return cudaSuccess;
                         }});
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!e->recorded) return cudaSuccess;
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of an unrecorded event");
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

// ---- graphs: a captured stream's work, in order ---------------------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t st, cudaStreamCaptureMode) {
  CUstream_st* s = stream_of(st);
  if (!st) return fail(cudaErrorStreamCaptureUnsupported, "capture of the legacy default stream");
  if (s->capturing) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture on a stream already capturing");
  s->capturing = true;
  s->capture_invalid = false;
  s->captured.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t* graph) {
  CUstream_st* s = stream_of(st);
  if (!s->capturing) return fail(cudaErrorIllegalState, "cudaStreamEndCapture on a stream not capturing");
  s->capturing = false;
  if (s->capture_invalid) {
    s->captured.clear();
    *graph = nullptr;
    return fail(cudaErrorStreamCaptureInvalidated, "the capture was invalidated by a synchronizing call");
  }
  *graph = new CUgraph_st{std::move(s->captured)};
  s->captured.clear();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  *exec = new CUgraphExec_st{g->work};
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
// An update keeps the instantiated topology: the same pieces of work, the same kernels, in the
// same order; arguments, sizes and addresses may change.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g, cudaGraphExecUpdateResultInfo* info) {
  if (info) std::memset(info, 0, sizeof *info);
  bool same = exec->work.size() == g->work.size();
  for (size_t i = 0; same && i < g->work.size(); ++i) same = exec->work[i].what == g->work[i].what;
  if (!same) {
    if (info) info->result = cudaGraphExecUpdateErrorTopologyChanged;
    last_error = cudaErrorGraphExecUpdateFailure;   // expected by callers: no report printed
    last_report.clear();
    return cudaErrorGraphExecUpdateFailure;
  }
  exec->work = g->work;
  if (info) info->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t st) {
  auto work = exec->work;   // a copy: the exec may be updated before the stream runs it
  return submit(st, Work{"graph", [work]() -> cudaError_t {
                           for (const Work& w : work) {
                             const cudaError_t e = w.run();
                             if (e != cudaSuccess) return e;
                           }
                           return cudaSuccess;
                         }});
}

}  // extern "C"
