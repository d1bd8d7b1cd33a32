// A small CUDA program for the `strata trace` GPU test: copies, a memset and a few cuBLAS GEMMs.
#include <cstdio>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

int main() {
  const int n = 1024;
  std::vector<float> host(static_cast<std::size_t>(n) * n, 1.0f);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const std::size_t bytes = host.size() * sizeof(float);
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess || cudaMalloc(&c, bytes) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host.data(), bytes, cudaMemcpyHostToDevice);
  cudaMemset(c, 0, bytes);
  cublasHandle_t h;
  cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  for (int i = 0; i < 3; ++i) cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  cudaMemcpy(host.data(), c, bytes, cudaMemcpyDeviceToHost);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  std::printf("c[0] = %.0f\n", host[0]);
  return host[0] == static_cast<float>(n) ? 0 : 1;
}
