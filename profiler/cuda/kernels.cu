#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace strata::profiler::kernels {

namespace {

constexpr int kThreads = 256;

template <typename T> __device__ __forceinline__ float load(const T* p, std::size_t i) { return static_cast<float>(p[i]); }
template <typename T> __device__ __forceinline__ void store(T* p, std::size_t i, float v) { p[i] = T(v); }

__device__ __forceinline__ std::uint32_t hash(std::uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}

template <typename T>
__global__ void fill_kernel(T* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    float v = (hash(static_cast<std::uint32_t>(i) ^ seed) & 0xffff) / 32767.5f - 1.0f;
    p[i] = T(v);
  }
}

// Sum over the CTA (kThreads threads) with warp shuffles.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < kThreads / 32; ++w) t += partial[w];
  return t;
}

__device__ float block_max(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) t = fmaxf(t, partial[w]);
  return t;
}

template <typename T>
__global__ void layernorm_kernel(const T* x, const T* gamma, const T* beta, T* y, int cols) {
  const std::size_t row = blockIdx.x * std::size_t(cols);
  float s = 0, ss = 0;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float v = load(x, row + c);
    s += v;
    ss += v * v;
  }
  s = block_sum(s);
  ss = block_sum(ss);
  const float mean = s / cols, inv = rsqrtf(fmaxf(ss / cols - mean * mean, 0.f) + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += kThreads)
    store(y, row + c, (load(x, row + c) - mean) * inv * load(gamma, c) + load(beta, c));
}

template <typename T>
__global__ void rmsnorm_kernel(const T* x, const T* gamma, T* y, int cols) {
  const std::size_t row = blockIdx.x * std::size_t(cols);
  float ss = 0;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float v = load(x, row + c);
    ss += v * v;
  }
  ss = block_sum(ss);
  const float inv = rsqrtf(ss / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += kThreads) store(y, row + c, load(x, row + c) * inv * load(gamma, c));
}

template <typename T>
__global__ void gelu_kernel(const T* x, T* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    float v = load(x, i);
    store(y, i, 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))));
  }
}

template <typename T>
__global__ void swiglu_kernel(const T* x, T* y, std::int64_t rows, int cols) {
  const std::size_t n = std::size_t(rows) * cols;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    std::size_t r = i / cols, c = i % cols;
    float g = load(x, r * 2 * cols + c), u = load(x, r * 2 * cols + cols + c);
    store(y, i, g / (1.f + __expf(-g)) * u);
  }
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    store(y, i, load(a, i) + load(b, i));
}

template <typename T>
__global__ void softmax_kernel(const T* x, T* y, int cols) {
  const std::size_t row = blockIdx.x * std::size_t(cols);
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, load(x, row + c));
  m = block_max(m);
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += __expf(load(x, row + c) - m);
  s = block_sum(s);
  const float inv = 1.f / s;
  for (int c = threadIdx.x; c < cols; c += kThreads) store(y, row + c, __expf(load(x, row + c) - m) * inv);
}

// Grid for grid-stride loops: enough CTAs to fill every SM several times over.
unsigned stride_grid(std::size_t n) {
  std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 * 8 ? (blocks ? blocks : 1) : 65536 * 8);
}

template <template <typename> class F, typename... Args>
void dispatch(DType t, Args&&... args) {
  if (t == DType::bf16) F<__nv_bfloat16>::run(args...);
  else F<__half>::run(args...);
}

}  // namespace

void fill_uniform(void* data, std::size_t n, DType t, std::uint32_t seed, cudaStream_t s) {
  unsigned grid = stride_grid(n);
  if (t == DType::bf16) fill_kernel<<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(data), n, seed);
  else if (t == DType::fp16) fill_kernel<<<grid, kThreads, 0, s>>>(static_cast<__half*>(data), n, seed);
  else fill_kernel<<<grid, kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(data), n, seed);
}

namespace {
template <typename T> struct LayerNormF {
  static void run(const void* x, const void* g, const void* b, void* y, std::int64_t rows, int cols, cudaStream_t s) {
    layernorm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(g),
                                                                         static_cast<const T*>(b), static_cast<T*>(y), cols);
  }
};
template <typename T> struct RmsNormF {
  static void run(const void* x, const void* g, void* y, std::int64_t rows, int cols, cudaStream_t s) {
    rmsnorm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(g), static_cast<T*>(y), cols);
  }
};
template <typename T> struct GeluF {
  static void run(const void* x, void* y, std::size_t n, cudaStream_t s) {
    gelu_kernel<T><<<stride_grid(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
  }
};
template <typename T> struct SwigluF {
  static void run(const void* x, void* y, std::int64_t rows, int cols, cudaStream_t s) {
    swiglu_kernel<T><<<stride_grid(std::size_t(rows) * cols), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), rows, cols);
  }
};
template <typename T> struct AddF {
  static void run(const void* a, const void* b, void* y, std::size_t n, cudaStream_t s) {
    add_kernel<T><<<stride_grid(n), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n);
  }
};
template <typename T> struct SoftmaxF {
  static void run(const void* x, void* y, std::int64_t rows, int cols, cudaStream_t s) {
    softmax_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), cols);
  }
};
}  // namespace

void layernorm(const void* x, const void* g, const void* b, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s) { dispatch<LayerNormF>(t, x, g, b, y, rows, cols, s); }
void rmsnorm(const void* x, const void* g, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s) { dispatch<RmsNormF>(t, x, g, y, rows, cols, s); }
void gelu(const void* x, void* y, std::size_t n, DType t, cudaStream_t s) { dispatch<GeluF>(t, x, y, n, s); }
void swiglu(const void* x, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s) { dispatch<SwigluF>(t, x, y, rows, cols, s); }
void residual_add(const void* a, const void* b, void* y, std::size_t n, DType t, cudaStream_t s) { dispatch<AddF>(t, a, b, y, n, s); }
void softmax(const void* x, void* y, std::int64_t rows, int cols, DType t, cudaStream_t s) { dispatch<SoftmaxF>(t, x, y, rows, cols, s); }

}  // namespace strata::profiler::kernels
