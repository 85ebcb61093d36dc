// Prefill's matmul over GGUF blocks: out[N,O] = x[N,I] @ W[O,I]^T (+ bias[O]) for any N, with
// W held as GGUF blocks only (any BlockType; no float32 copy: tensor/quant_blocks.h).
// The O outputs go in pieces of a size the shape alone sets (over_rows.h's sgemm_piece, at most
// a panel of kPrefillPanelBytes), spread over the OpenMP threads: dequantize the piece's rows
// into the thread's buffer (kept for the thread's life), then one sgemm of x against it. The
// float32 copy of the whole matrix is never made: the extra memory is one panel per thread.
//
// Numbers: the panel holds exactly the loader's float32 values (bit for bit those of
// dequantize_block_rows), and each output is one sgemm dot product over the whole row, as
// the float32 path computes it; only OpenBLAS's blocking of the output columns may differ
// (the same pieces where a panel holds sgemm_piece(O) rows). No thread count changes them.
// Cost: one dequantization of W per call (I*O weights against N*I*O multiply-adds; AVX2 when
// the processor has it) and one sgemm call per piece. Measured on SmolLM2's layer shapes, N =
// 128, one thread (CPU time against sgemm over float32 values): +3-4% with 2 MiB panels; with a
// buffer allocated per call, +7% with 1 MiB, +22% with 128 KiB, and 4 MiB gained nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "tensor/quant_blocks.h"

namespace lmscope::cpu {

// Scratch per thread: a panel of rows of this many float32 bytes (at least kPrefillMinRows
// rows, so a wide matrix still gives sgemm a panel it can block).
constexpr size_t kPrefillPanelBytes = size_t(2048) << 10;
constexpr int64_t kPrefillMinRows = 16;

// Rows per panel for a matrix of `cols` columns.
int64_t prefill_panel_rows(int64_t cols);

// Rows [row0, row0 + n) of W as float32 into out[n, W.cols], bit-identical to
// dequantize_block_rows (tensor/quant_blocks.h): kernel_table.h's prefill_panel build, AVX2
// (products and sums as separate roundings, as the scalar code) or that function. One thread.
void dequantize_panel(const QuantBlocks& W, int64_t row0, int64_t n, float* out);
void dequantize_panel_avx2(const QuantBlocks& W, int64_t row0, int64_t n, float* out);   // for the tests
bool dequantize_panel_simd_available();   // kernel_table.h's processor_runs(Isa::avx2)

// The panel loop itself, for a weight held in any form: out [N,O] = x [N,I] @ W^T (+ bias),
// fill(row0, n, panel) writing W's rows [row0, row0 + n) as float32 into panel[n, I] (one
// thread). half_matmul.h's prefill fills panels by widening bf16/f16 rows.
using PanelFill = std::function<void(int64_t row0, int64_t n, float* panel)>;
void panel_matmul(float* out, const float* x, int64_t O, int64_t I, const float* bias, int64_t N,
                  const PanelFill& fill);

// out [N,O], x [N,I] row-major float32, bias [O] or null; any N >= 1: panel_matmul with
// dequantize_panel.
void block_prefill_matmul(float* out, const float* x, const QuantBlocks& W, const float* bias, int64_t N);

}  // namespace lmscope::cpu
