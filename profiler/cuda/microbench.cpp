#include "microbench.h"

#include <stdexcept>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include "kernels.h"

namespace strata::profiler {

namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {} failed: {}", what, cudaGetErrorString(e)));
}
void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuBLAS: {} failed: status {}", what, static_cast<int>(s)));
}
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("NCCL: {} failed: {}", what, ncclGetErrorString(r)));
}

std::size_t element_size(const std::string& precision) { return precision == "fp8" ? 1 : precision == "fp32" ? 4 : 2; }
kernels::DType dtype(const std::string& precision) {
  return precision == "fp16" ? kernels::DType::fp16 : precision == "fp8" ? kernels::DType::fp8_e4m3 : kernels::DType::bf16;
}
std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

struct Microbench::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  void* lt_workspace = nullptr;
  static constexpr std::size_t kLtWorkspace = 64u << 20;
  void* pinned = nullptr;
  std::size_t pinned_bytes = 0;
  // NCCL across every visible GPU (single process, one communicator per device).
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> comm_streams;
  std::vector<void*> comm_buffers;
  std::size_t comm_bytes = 0;

  char* carve(std::size_t offset) const { return static_cast<char*>(workspace) + offset; }

  void gemm(const OpLabel& op) {
    const auto m = static_cast<std::int64_t>(op.m), n = static_cast<std::int64_t>(op.n), k = static_cast<std::int64_t>(op.k);
    const auto batch = static_cast<std::int64_t>(op.batch);
    const std::size_t es = element_size(op.precision);
    const std::size_t a_bytes = align_up(static_cast<std::size_t>(m * k * batch) * es);
    const std::size_t b_bytes = align_up(static_cast<std::size_t>(k * n * batch) * es);
    char* A = carve(0);
    char* B = carve(a_bytes);
    char* C = carve(a_bytes + b_bytes);
    const float alpha = 1.0f, beta = 0.0f;
    if (op.precision == "fp8") {
      // cuBLASLt fp8: column-major D[n, m] = W^T[n, k] X[k, m], W stored k x n (op T), bf16 output.
      cublasLtMatmulDesc_t desc;
      cublasLtMatrixLayout_t la, lb, lc;
      cublas_check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
      cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, n, k);
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, m, k);
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      std::size_t ws = kLtWorkspace;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
      cublasLtMatmulHeuristicResult_t heur{};
      int found = 0;
      cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found);
      if (st == CUBLAS_STATUS_SUCCESS && found > 0)
        st = cublasLtMatmul(lt, desc, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &heur.algo, lt_workspace, kLtWorkspace, stream);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
      if (found == 0) throw std::runtime_error("cuBLASLt: no fp8 algorithm for this shape");
      cublas_check(st, "cublasLtMatmul(fp8)");
      return;
    }
    // Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T[n, m] = B^T[n, k] A^T[k, m].
    const cudaDataType_t t = op.precision == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
    if (batch == 1) {
      cublas_check(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
                                B, t, static_cast<int>(n), A, t, static_cast<int>(k), &beta, C, t, static_cast<int>(n),
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    } else {
      cublas_check(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                              static_cast<int>(k), &alpha, B, t, static_cast<int>(n), k * n, A, t,
                                              static_cast<int>(k), m * k, &beta, C, t, static_cast<int>(n), m * n,
                                              static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmStridedBatchedEx");
    }
  }

  void elementwise(const OpLabel& op) {
    const auto elements = static_cast<std::size_t>(op.m);
    const int row = std::max(1, static_cast<int>(op.n));
    const std::int64_t rows = static_cast<std::int64_t>(elements / static_cast<std::size_t>(row));
    const std::size_t es = element_size(op.precision);
    const kernels::DType t = dtype(op.precision);
    char* x = carve(0);
    char* y = carve(align_up(2 * elements * es));  // x may be 2x wide (SwiGLU)
    char* z = carve(align_up(2 * elements * es) + align_up(elements * es));
    if (op.name == "layernorm") kernels::layernorm(x, z, z + align_up(row * es), y, rows, row, t, stream);
    else if (op.name == "rmsnorm") kernels::rmsnorm(x, z, y, rows, row, t, stream);
    else if (op.name == "gelu") kernels::gelu(x, y, elements, t, stream);
    else if (op.name == "swiglu") kernels::swiglu(x, y, rows, row, t, stream);
    else if (op.name == "residual_add") kernels::residual_add(x, z, y, elements, t, stream);
    else if (op.name == "softmax") kernels::softmax(x, y, rows, row, t, stream);
    else throw std::runtime_error("no kernel for elementwise op " + op.name);
    cuda_check(cudaGetLastError(), op.name.c_str());
  }

  void copy(const OpLabel& op) {
    const auto bytes = static_cast<std::size_t>(op.m);
    if (op.name == "memcpy_HtoD") cuda_check(cudaMemcpyAsync(workspace, pinned, bytes, cudaMemcpyHostToDevice, stream), "memcpy HtoD");
    else if (op.name == "memcpy_DtoH") cuda_check(cudaMemcpyAsync(pinned, workspace, bytes, cudaMemcpyDeviceToHost, stream), "memcpy DtoH");
    else cuda_check(cudaMemcpyAsync(carve(align_up(bytes)), workspace, bytes, cudaMemcpyDeviceToDevice, stream), "memcpy DtoD");
  }

  void collective(const OpLabel& op) {
    const int n = static_cast<int>(comms.size());
    const auto bytes = static_cast<std::size_t>(op.bytes);
    const std::size_t count = bytes / 2;  // bf16 elements of the full buffer
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < n; ++r) {
      char* buf = static_cast<char*>(comm_buffers[r]);
      if (op.name == "all_reduce") nccl_check(ncclAllReduce(buf, buf, count, ncclBfloat16, ncclSum, comms[r], comm_streams[r]), "ncclAllReduce");
      else if (op.name == "all_gather") nccl_check(ncclAllGather(buf + r * (bytes / n), buf, count / n, ncclBfloat16, comms[r], comm_streams[r]), "ncclAllGather");
      else nccl_check(ncclReduceScatter(buf, buf + r * (bytes / n), count / n, ncclBfloat16, ncclSum, comms[r], comm_streams[r]), "ncclReduceScatter");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
};

Microbench::Microbench(int device, std::size_t workspace_bytes, std::size_t pinned_bytes) : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.device = device;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cuda_check(cudaStreamCreateWithFlags(&I.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublas_check(cublasCreate(&I.blas), "cublasCreate");
  cublas_check(cublasSetStream(I.blas, I.stream), "cublasSetStream");
  cublas_check(cublasLtCreate(&I.lt), "cublasLtCreate");
  cuda_check(cudaMalloc(&I.lt_workspace, Impl::kLtWorkspace), "cudaMalloc(cuBLASLt workspace)");
  I.workspace_bytes = workspace_bytes;
  cuda_check(cudaMalloc(&I.workspace, workspace_bytes), "cudaMalloc(workspace)");
  kernels::fill_uniform(I.workspace, workspace_bytes / 2, kernels::DType::bf16, 1234u, I.stream);
  I.pinned_bytes = pinned_bytes;
  cuda_check(cudaMallocHost(&I.pinned, pinned_bytes), "cudaMallocHost");
  int ndev = 0;
  cuda_check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  if (ndev >= 2) {
    I.comms.resize(ndev);
    nccl_check(ncclCommInitAll(I.comms.data(), ndev, nullptr), "ncclCommInitAll");
    I.comm_bytes = 1024u << 20;
    for (int d = 0; d < ndev; ++d) {
      cuda_check(cudaSetDevice(d), "cudaSetDevice");
      cudaStream_t s;
      void* buf;
      cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      cuda_check(cudaMalloc(&buf, I.comm_bytes), "cudaMalloc(NCCL buffer)");
      kernels::fill_uniform(buf, I.comm_bytes / 2, kernels::DType::bf16, 7u + d, s);
      I.comm_streams.push_back(s);
      I.comm_buffers.push_back(buf);
    }
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
  }
  synchronize();
}

Microbench::~Microbench() {
  auto& I = *impl_;
  for (std::size_t d = 0; d < I.comms.size(); ++d) {
    cudaSetDevice(static_cast<int>(d));
    ncclCommDestroy(I.comms[d]);
    cudaFree(I.comm_buffers[d]);
    cudaStreamDestroy(I.comm_streams[d]);
  }
  cudaSetDevice(I.device);
  cudaFreeHost(I.pinned);
  cudaFree(I.workspace);
  cudaFree(I.lt_workspace);
  cublasLtDestroy(I.lt);
  cublasDestroy(I.blas);
  cudaStreamDestroy(I.stream);
}

std::size_t Microbench::operand_bytes(const OpLabel& op) {
  const std::size_t es = element_size(op.precision);
  if (op.kind == "gemm") {
    const double b = op.batch;
    return align_up(static_cast<std::size_t>(op.m * op.k * b) * es) + align_up(static_cast<std::size_t>(op.k * op.n * b) * es) +
           align_up(static_cast<std::size_t>(op.m * op.n * b) * (op.precision == "fp8" ? 2 : es));
  }
  if (op.kind == "elementwise") {
    const auto e = static_cast<std::size_t>(op.m);
    return align_up(2 * e * es) + align_up(e * es) + align_up(e * es) + align_up(2 * static_cast<std::size_t>(op.n) * es);
  }
  if (op.kind == "memcpy") return 2 * align_up(static_cast<std::size_t>(op.m));
  return 0;
}

bool Microbench::supported(const OpLabel& op, std::string* why) const {
  const auto& I = *impl_;
  if (op.kind == "collective") {
    if (I.comms.size() < 2) return *why = "one GPU: collectives need at least two", false;
    if (op.bytes > static_cast<double>(I.comm_bytes)) return *why = "message larger than the NCCL buffer", false;
    return true;
  }
  if (op.kind == "memcpy" && op.m > static_cast<double>(I.pinned_bytes)) return *why = "larger than the pinned host buffer", false;
  if (operand_bytes(op) > I.workspace_bytes) return *why = fmt::format("operands need {:.1f} GiB", static_cast<double>(operand_bytes(op)) / 1073741824.0), false;
  if (op.kind == "gemm" && op.precision == "fp8" && (static_cast<std::int64_t>(op.k) % 16 || static_cast<std::int64_t>(op.n) % 16 || op.batch != 1))
    return *why = "fp8 GEMMs need k and n multiples of 16 and no batch", false;
  if (op.kind == "elementwise" && op.m / std::max(1.0, op.n) > 2147483647.0) return *why = "too many rows", false;
  return true;
}

void Microbench::launch(const OpLabel& op) {
  auto& I = *impl_;
  if (op.kind == "gemm") I.gemm(op);
  else if (op.kind == "elementwise") I.elementwise(op);
  else if (op.kind == "memcpy") I.copy(op);
  else if (op.kind == "collective") I.collective(op);
  else throw std::runtime_error("cannot launch op kind " + op.kind);
}

void Microbench::synchronize() {
  auto& I = *impl_;
  for (std::size_t d = 0; d < I.comms.size(); ++d) {
    cuda_check(cudaSetDevice(static_cast<int>(d)), "cudaSetDevice");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  cuda_check(cudaSetDevice(I.device), "cudaSetDevice");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

std::string Microbench::cublas_version() const {
  int v = 0;
  cublasGetVersion(impl_->blas, &v);
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

std::string Microbench::nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

int Microbench::collective_ranks() const { return impl_->comms.empty() ? 1 : static_cast<int>(impl_->comms.size()); }

}  // namespace strata::profiler
