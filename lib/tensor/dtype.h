// Element types a tensor can hold.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace lmscope {

enum class DType : uint8_t { F32, F16, BF16, I32 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);   // "F32", "F16", "BF16", "I32" (safetensors spelling)

}  // namespace lmscope
