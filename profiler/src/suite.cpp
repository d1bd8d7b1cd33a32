#include "profiler/suite.h"

#include <optional>
#include <set>

#include <fmt/format.h>
#include <tuple>

#include "costmodel/layer_ops.h"

namespace strata::profiler {

OpLabel label_of(const Op& op, const std::string& kind, const std::string& precision) {
  OpLabel l;
  l.name = op.name;
  l.kind = kind;
  l.precision = precision;
  l.m = op.m;
  l.n = op.n;
  l.k = op.k;
  l.batch = op.batch;
  l.flops = op.flops;
  l.bytes = op.bytes;
  return l;
}

std::vector<std::string> default_suite_models(bool quick) {
  if (quick) return {"gpt3-1.3b", "llama3-8b", "llama3-70b"};
  // 1B .. 1T, MHA and GQA, GELU and SwiGLU, dense and MoE.
  return {"gpt3-1.3b", "gpt3-2.7b",  "gpt3-6.7b",  "llama3-8b",     "gpt3-13b",     "mpt-30b",     "mixtral-8x7b",
          "llama3-70b", "gpt3-175b", "llama3.1-405b", "sc21-gpt-530b", "sc21-gpt-1t"};
}

namespace {

int element_bytes(const std::string& precision) { return precision == "fp32" ? 4 : 2; }

// Which of the project's own kernels runs a layer's elementwise op, and the DRAM bytes it moves
// per output element (so the label's bytes are what the kernel really moves).
struct ElementwiseKernel {
  const char* name;
  double bytes_per_element;  // in units of the element size
  double flops_per_element;
};

std::optional<ElementwiseKernel> elementwise_kernel(const std::string& op, const ModelSpec& m) {
  const bool rms = m.normalization == Normalization::rmsnorm;
  if (op == "input_norm" || op == "post_attn_norm") return ElementwiseKernel{rms ? "rmsnorm" : "layernorm", 2, rms ? 4.0 : 5.0};
  if (op == "activation") {
    if (m.activation == Activation::swiglu) return ElementwiseKernel{"swiglu", 3, 8};
    return ElementwiseKernel{"gelu", 2, 8};
  }
  if (op == "bias_dropout_add") return ElementwiseKernel{"residual_add", 3, 1};
  if (op == "softmax") return ElementwiseKernel{"softmax", 2, 5};
  return std::nullopt;
}

}  // namespace

std::vector<OpLabel> kernel_suite(const Catalog& catalog, const SuiteOptions& o) {
  std::vector<std::string> models = o.models.empty() ? default_suite_models(o.quick) : o.models;
  std::vector<int> tps = o.tp.empty() ? (o.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 2, 4, 8}) : o.tp;
  std::vector<std::int64_t> seqs = o.seq.empty() ? (o.quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{2048, 8192}) : o.seq;
  std::vector<std::string> precisions = o.precisions.empty() ? std::vector<std::string>{"bf16", "fp16", "fp8"} : o.precisions;
  if (o.quick && o.precisions.empty()) precisions = {"bf16", "fp8"};

  std::vector<OpLabel> out;
  std::set<std::tuple<std::string, std::string, double, double, double, double, double>> seen;
  auto add = [&](OpLabel l) {
    auto key = std::make_tuple(l.name + "/" + l.kind, l.precision, l.m, l.n, l.k, l.batch, l.bytes);
    if (o.max_operand_bytes > 0 && l.bytes > o.max_operand_bytes) return;
    if (seen.insert(key).second) out.push_back(std::move(l));
  };
  for (const auto& name : models) {
    ModelSpec m = catalog.model(name);
    for (int tp : tps) {
      if (m.num_attention_heads % tp != 0 || m.num_query_groups % tp != 0) continue;
      for (std::int64_t seq : seqs) {
        LayerShape s;
        s.micro_batch = 1;
        s.seq = seq;
        s.tp = tp;
        s.sequence_parallel = tp > 1;
        std::string src = fmt::format("{} tp={} seq={}", name, tp, seq);
        for (const auto& prec : precisions) {
          if (prec == "fp8" && !o.fp8_supported) continue;
          const bool fp8 = prec == "fp8";
          s.element_bytes = element_bytes(prec);
          // GEMMs of forward and backward (fp8 runs the forward and data-gradient GEMMs in fp8
          // in Transformer Engine; the suite times every GEMM shape in each precision).
          s.flash_attention = true;
          LayerOps ops = decoder_layer_ops(m, s);
          for (const auto* phase : {&ops.forward, &ops.backward})
            for (const auto& op : *phase) {
              if (op.kind != OpKind::gemm) continue;
              OpLabel l = label_of(op, "gemm", prec);
              // fp8 operands are one byte, the output stays bf16.
              l.bytes = fp8 ? (op.m * op.k + op.k * op.n + 2 * op.m * op.n) * op.batch : op.bytes;
              l.source = src + (phase == &ops.forward ? " fwd" : " bwd");
              add(l);
            }
          if (fp8) continue;  // attention and elementwise kernels stay in 16-bit
          // Unfused attention (cuBLAS batched GEMM + the project's softmax), the shapes of the
          // layer's non-flash path: scores, softmax, values.
          s.flash_attention = false;
          LayerOps unfused = decoder_layer_ops(m, s);
          for (const auto& op : unfused.forward) {
            OpLabel l;
            l.precision = prec;
            l.source = src + " fwd";
            if (op.kind == OpKind::gemm && (std::string_view(op.name) == "attn_scores" || std::string_view(op.name) == "attn_values")) {
              l = label_of(op, "gemm", prec);
              l.source = src + " fwd";
              add(l);
            } else if (op.kind == OpKind::elementwise) {
              auto ek = elementwise_kernel(op.name, m);
              if (!ek) continue;
              // Elements of the op's output, from the layer's shapes.
              double tokens = static_cast<double>(s.micro_batch * seq);
              double n_el = 0;
              std::string_view nm(op.name);
              if (nm == "softmax") n_el = static_cast<double>(s.micro_batch) * (m.num_attention_heads / tp) * static_cast<double>(seq) * static_cast<double>(seq);
              else if (nm == "activation") n_el = tokens * static_cast<double>(m.moe ? m.moe->expert_ffn_hidden_size : m.ffn_hidden_size) / tp;
              else n_el = (s.sequence_parallel ? tokens / tp : tokens) * static_cast<double>(m.hidden_size);
              l.name = ek->name;
              l.kind = "elementwise";
              // Elementwise labels keep the element count in m and the row length in n (norms and
              // softmax reduce over rows), for the runner.
              l.m = n_el;
              l.n = nm == "softmax" ? static_cast<double>(seq) : static_cast<double>(m.hidden_size);
              if (nm == "activation") l.n = static_cast<double>(m.moe ? m.moe->expert_ffn_hidden_size : m.ffn_hidden_size) / tp;
              l.k = 0;
              l.batch = 1;
              l.flops = n_el * ek->flops_per_element;
              l.bytes = n_el * ek->bytes_per_element * s.element_bytes;
              add(l);
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<OpLabel> memcpy_suite(bool quick) {
  std::vector<OpLabel> out;
  std::vector<double> sizes = quick ? std::vector<double>{1 << 20, 64 << 20, 512 << 20}
                                    : std::vector<double>{64 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20, 1024.0 * (1 << 20)};
  for (const char* kind : {"HtoD", "DtoH", "DtoD"})
    for (double b : sizes) {
      OpLabel l;
      l.name = std::string("memcpy_") + kind;
      l.kind = "memcpy";
      l.precision = "fp32";
      l.bytes = std::string_view(kind) == "DtoD" ? 2 * b : b;  // DtoD reads and writes HBM
      l.m = b;                                                  // copy size
      out.push_back(l);
    }
  return out;
}

std::vector<OpLabel> collective_suite(bool quick, int ranks) {
  std::vector<OpLabel> out;
  if (ranks < 2) return out;
  std::vector<double> sizes = quick ? std::vector<double>{1 << 20, 64 << 20, 256 << 20}
                                    : std::vector<double>{64 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20, 1024.0 * (1 << 20)};
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter"})
    for (double b : sizes) {
      OpLabel l;
      l.name = name;
      l.kind = "collective";
      l.precision = "bf16";
      l.bytes = b;  // nccl-tests "size": the full (gathered / reduced) buffer
      l.ranks = ranks;
      out.push_back(l);
    }
  return out;
}

}  // namespace strata::profiler
