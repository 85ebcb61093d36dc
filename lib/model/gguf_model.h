// A Llama (or Qwen2) decoder from a GGUF file: ModelConfig from the `<arch>.*` metadata and
// the tokenizer.ggml.*_token_id keys, Weights (2-D Q8_0/Q4_1/Q4_K/Q5_K/Q6_K matrices held as their
// blocks only, views into the mapping (Tensor::from_blocks); 2-D F16/BF16 matrices held as
// stored, F16/BF16 views of the mapping like an HF checkpoint's safetensors; the F32 norms views
// too; every other tensor dequantized to float32 at load), llama.cpp tensor names mapped to
// ours, and the q/k row permutation of llama.cpp's Llama converter undone so HF-convention RoPE
// applies unchanged. docs/gguf.md has the mapping and the permutation.
#pragma once
#include <string>

#include "io/gguf.h"
#include "model/config.h"
#include "model/weights.h"

namespace lmscope {

struct GgufModel {
  ModelConfig cfg;
  Weights weights;
};

// Throws std::runtime_error with a one-line message starting with the file's path and
// naming the key or tensor at fault. Every tensor in the file must be used: an unknown one
// (rope_freqs, q/k norms, experts...) means a model we would compute wrongly, so it is refused.
GgufModel load_gguf_model(const std::string& path);

// The config alone (no tensor data is read, but the tensor list is consulted for tying,
// biases and the vocabulary size).
ModelConfig gguf_model_config(const GgufFile& file);

// Undoes llama.cpp's `permute(w, n_head)` (convert_hf_to_gguf.py LlamaModel.permute) on the
// rows of a q/k weight [n_head*hd, in] or bias [n_head*hd]: GGUF row h*hd + 2j + i holds HF
// row h*hd + i*hd/2 + j (i in {0,1}, j < hd/2). Returns a new host tensor: values in `w`'s
// dtype (float32 or F16/BF16) and/or blocks, as `w` has them.
Tensor gguf_unpermute_rows(const Tensor& w, int n_head);

}  // namespace lmscope
