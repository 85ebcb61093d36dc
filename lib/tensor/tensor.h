// Tensor: a shape, an element type and a pointer to storage that the tensor keeps alive.
// Row-major (the last axis is contiguous). Storage is host memory (Device::Host) or, made by
// the CUDA backend, device memory (Device::Cuda). A GGUF Q8_0/Q4_1 weight is held as its
// quantization blocks only (from_blocks): an F32 matrix with no float storage, whose values
// are read with values_f32() or dequantize_block_rows (tensor/quant_blocks.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace lmscope {

enum class Device : uint8_t { Host, Cuda };

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);   // "[2,4,8]"
int64_t shape_numel(const Shape& s);

class Tensor {
 public:
  Tensor() = default;

  // New zero-filled host tensor.
  static Tensor zeros(Shape shape, DType dtype = DType::F32);
  // New host tensor whose contents are unspecified until written (for outputs that an op
  // writes whole: no pass over the memory to zero it first).
  static Tensor empty(Shape shape, DType dtype = DType::F32);
  // A view of memory owned by `owner` (an mmap, another tensor's storage...).
  static Tensor view(Shape shape, DType dtype, void* data, std::shared_ptr<void> owner,
                     Device device = Device::Host);
  // A host view of file bytes when they are aligned for `dtype`, else a copy: a safetensors
  // header whose length is not a multiple of 8, or a GGUF with general.alignment 1 or 2, puts
  // tensors at any address, and loading a float from a misaligned one is undefined behaviour.
  static Tensor view_or_copy(Shape shape, DType dtype, const void* data, std::shared_ptr<void> owner);
  // A [rows, cols] F32 matrix held as GGUF blocks only: no float storage (raw() is null,
  // f32() throws); values_f32() dequantizes it.
  static Tensor from_blocks(std::shared_ptr<const QuantBlocks> blocks);

  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int ndim() const { return int(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool defined() const { return data_ != nullptr || blocks_ != nullptr || numel() == 0; }
  // Whether raw()/f32() reach the values (false for a tensor held as blocks only).
  bool has_storage() const { return data_ != nullptr || numel() == 0; }
  // Whether two tensors are the same values in memory (a tied head and its embedding):
  // the same storage and the same blocks.
  bool same_storage(const Tensor& o) const { return data_ == o.data_ && blocks_ == o.blocks_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  float* f32();               // throws unless dtype is F32 on the host with storage
  const float* f32() const;
  int32_t* i32();
  const int32_t* i32() const;

  // The values as GGUF quantization blocks, when the tensor was loaded from them (a 2-D
  // Q8_0/Q4_1 weight); null otherwise. Copies and reshapes keep it. A tensor may have both
  // (the tests attach blocks to float values to compare the two paths).
  const std::shared_ptr<const QuantBlocks>& blocks() const { return blocks_; }
  void set_blocks(std::shared_ptr<const QuantBlocks> b) { blocks_ = std::move(b); }

  // Same storage, new shape with the same number of elements.
  Tensor reshape(Shape shape) const;
  // Host copy converted to float32 (F16/BF16/I32 widened, blocks-only dequantized).
  Tensor to_f32() const;
  // Rows [r0, r0 + n) of the first axis converted as to_f32 converts them, into out
  // (n * numel() / dim(0) floats), without converting the rest: an embedding row, two rows of
  // an unembedding. Rows outside the first axis: std::out_of_range.
  void rows_f32(int64_t r0, int64_t n, float* out) const;
  // The values as a host float32 tensor with storage: this tensor itself when it is one,
  // else to_f32() (a blocks-only weight dequantized: 4 bytes a weight, for as long as the
  // caller keeps the result).
  Tensor values_f32() const;

 private:
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::Host;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
  std::shared_ptr<const QuantBlocks> blocks_;
};

}  // namespace lmscope
