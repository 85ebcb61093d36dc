#include "tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "kernels/dtype_convert.cuh"

namespace lmscope {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
  }
  return "?";
}

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << "]";
  return o.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor Tensor::empty(Shape shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  size_t bytes = std::max<size_t>(t.nbytes(), 1);
  // 64-byte alignment keeps BLAS and SIMD loops on their fast path.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::runtime_error("out of memory allocating a tensor of shape " + shape_str(t.shape_));
  t.owner_ = std::shared_ptr<void>(p, std::free);
  t.data_ = p;
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  std::memset(t.data_, 0, std::max<size_t>(t.nbytes(), 1));
  return t;
}

Tensor Tensor::view(Shape shape, DType dtype, void* data, std::shared_ptr<void> owner, Device device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.data_ = data;
  t.owner_ = std::move(owner);
  t.device_ = device;
  return t;
}

Tensor Tensor::view_or_copy(Shape shape, DType dtype, const void* data, std::shared_ptr<void> owner) {
  // The mapping is read-only; the const_cast only satisfies view()'s signature.
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) == 0)
    return view(std::move(shape), dtype, const_cast<void*>(data), std::move(owner));
  Tensor t = zeros(std::move(shape), dtype);
  std::memcpy(t.data_, data, t.nbytes());
  return t;
}

Tensor Tensor::from_blocks(std::shared_ptr<const QuantBlocks> blocks) {
  if (!blocks) throw std::logic_error("from_blocks: no blocks");
  Tensor t;
  t.shape_ = {blocks->rows, blocks->cols};
  t.blocks_ = std::move(blocks);
  return t;
}

float* Tensor::f32() {
  if (dtype_ != DType::F32 || device_ != Device::Host)
    throw std::logic_error(std::string("tensor is ") + dtype_name(dtype_) + ", not host F32");
  if (!has_storage())
    throw std::logic_error("tensor " + shape_str(shape_) +
                           " is held as GGUF blocks only: read its values with values_f32() or dequantize_block_rows");
  return static_cast<float*>(data_);
}
const float* Tensor::f32() const { return const_cast<Tensor*>(this)->f32(); }

int32_t* Tensor::i32() {
  if (dtype_ != DType::I32 || device_ != Device::Host)
    throw std::logic_error(std::string("tensor is ") + dtype_name(dtype_) + ", not host I32");
  return static_cast<int32_t*>(data_);
}
const int32_t* Tensor::i32() const { return const_cast<Tensor*>(this)->i32(); }

Tensor Tensor::reshape(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw std::logic_error("reshape " + shape_str(shape_) + " -> " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::to_f32() const {
  if (device_ != Device::Host) throw std::logic_error("to_f32 needs a host tensor");
  Tensor out = Tensor::empty(shape_, DType::F32);
  if (numel() > 0) rows_f32(0, ndim() ? dim(0) : 1, out.f32());
  return out;
}

void Tensor::rows_f32(int64_t r0, int64_t n, float* o) const {
  if (device_ != Device::Host) throw std::logic_error("rows_f32 needs a host tensor");
  const int64_t R = ndim() ? dim(0) : 1;
  if (r0 < 0 || n < 0 || r0 + n > R)
    throw std::out_of_range("rows_f32: rows [" + std::to_string(r0) + ", " + std::to_string(r0 + n) +
                            ") of a tensor of " + std::to_string(R));
  if (!has_storage()) {
    dequantize_block_rows(*blocks_, r0, n, o);
    return;
  }
  const int64_t C = R ? numel() / R : 0, first = r0 * C, count = n * C;
  switch (dtype_) {
    case DType::F32: std::memcpy(o, static_cast<const float*>(data_) + first, size_t(count) * 4); break;
    case DType::F16: {
      auto* s = static_cast<const uint16_t*>(data_) + first;
      for (int64_t i = 0; i < count; ++i) o[i] = f16_to_f32(s[i]);
    } break;
    case DType::BF16: {
      auto* s = static_cast<const uint16_t*>(data_) + first;
      for (int64_t i = 0; i < count; ++i) o[i] = bf16_to_f32(s[i]);
    } break;
    case DType::I32: {
      auto* s = static_cast<const int32_t*>(data_) + first;
      for (int64_t i = 0; i < count; ++i) o[i] = float(s[i]);
    } break;
  }
}

Tensor Tensor::values_f32() const {
  if (dtype_ == DType::F32 && device_ == Device::Host && has_storage()) return *this;
  return to_f32();
}

}  // namespace lmscope
