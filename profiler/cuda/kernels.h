#pragma once
// The project's own kernels for the microbenchmarks: layernorm, rmsnorm, GELU, SwiGLU, residual
// add, row softmax (16-bit types, fp32 math), and a fill kernel for operands. Host-side launchers.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace strata::profiler::kernels {

enum class DType { fp16, bf16, fp8_e4m3 };

// Fills n elements with deterministic pseudo-random values in [-1, 1] (zeros would let tensor
// cores run at lower power and higher clocks than real data).
void fill_uniform(void* data, std::size_t n, DType t, std::uint32_t seed, cudaStream_t s);

// y[rows, cols] = norm(x[rows, cols]) * gamma (+ beta); one CTA per row.
void layernorm(const void* x, const void* gamma, const void* beta, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s);
void rmsnorm(const void* x, const void* gamma, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s);
// y[n] = gelu(x[n]) (tanh approximation).
void gelu(const void* x, void* y, std::size_t n, DType t, cudaStream_t s);
// x[rows, 2*cols] = [gate | up]; y[rows, cols] = silu(gate) * up.
void swiglu(const void* x, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s);
// y[n] = a[n] + b[n].
void residual_add(const void* a, const void* b, void* y, std::size_t n, DType t, cudaStream_t s);
// y[rows, cols] = softmax(x[rows, cols]) along rows (causal masking not applied).
void softmax(const void* x, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s);

}  // namespace strata::profiler::kernels
