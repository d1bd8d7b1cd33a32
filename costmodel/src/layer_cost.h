#pragma once
// The predictor's first step: what one decoder layer costs one GPU per micro-batch, its kernels and
// the TP, CP and EP communication and host time around them, by where the time goes.
// (Internal to the cost model: predictor.cpp's view of a layer.)
#include "costmodel/comm_model.h"
#include "costmodel/job.h"
#include "costmodel/kernel_model.h"
#include "costmodel/layer_ops.h"

namespace strata {

// Per-micro-batch cost of one layer on one GPU, split by where the time goes.
struct LayerCost {
  double fwd_compute = 0;
  double bwd_compute = 0;
  double recompute = 0;   // extra forward work done in backward
  double fwd_tp = 0;      // exposed TP communication, forward
  double bwd_tp = 0;      // exposed TP communication, backward (incl. recomputed forward's)
  double fwd_cp = 0;
  double bwd_cp = 0;
  double fwd_ep = 0;      // MoE all-to-all
  double bwd_ep = 0;
  // Host time beyond the GPU time: a dropless MoE layer's forward cannot be queued ahead of the
  // GPU, and a backward the host issues slower than the GPU runs it waits for the host
  // (moe_layer_host_time); a dense layer the host issues slower than the GPU runs it makes the GPU
  // wait for the difference (dense_layer_host_time).
  double fwd_host = 0;
  double bwd_host = 0;
  // Fine-grained activation offloading: the copies to the host (forward) and back (backward) the
  // layer's own time does not hide.
  double fwd_offload = 0;
  double bwd_offload = 0;
  double recompute_flops = 0;
  // Layers run one after another (a hybrid MTP module's): every part adds up.
  LayerCost& operator+=(const LayerCost& o) {
    fwd_compute += o.fwd_compute;
    bwd_compute += o.bwd_compute;
    recompute += o.recompute;
    fwd_tp += o.fwd_tp;
    bwd_tp += o.bwd_tp;
    fwd_cp += o.fwd_cp;
    bwd_cp += o.bwd_cp;
    fwd_ep += o.fwd_ep;
    bwd_ep += o.bwd_ep;
    fwd_host += o.fwd_host;
    bwd_host += o.bwd_host;
    fwd_offload += o.fwd_offload;
    bwd_offload += o.bwd_offload;
    recompute_flops += o.recompute_flops;
    return *this;
  }
};

// Of a PCIe Gen5 x16 link's 64 GB/s per direction, what a bulk copy carries: 128b/130b encoding
// (0.985), 256-byte TLP payloads behind ~24 bytes of header, framing and CRC (0.91), and the
// link's flow-control and acknowledgement packets (~0.96): 0.86, about 55 GB/s. Protocol
// arithmetic, not a measurement; taken for NVLink-C2C too. Activation offloading's copies run at
// it (GpuSpec::pcie_GBps is the GPU's host link).
inline constexpr double kHostLinkEfficiency = 0.86;

// What a layer's cost depends on beyond its kind, as the predictor has placed the job.
struct LayerCostInputs {
  const Job& job;
  const LayerShape& shape;          // one micro-batch on one GPU
  const KernelModel& kernels;       // at the run's precision
  const KernelModel* bf16_kernels;  // the layers a low-precision run keeps in bf16; null when none are
  const CommModel& comm;
  GroupPlacement cp_group, ep_group;  // where the CP and EP x ETP collectives run
  double tokens;                      // one micro-batch's tokens on one CP rank
  double tp_collective;               // one TP collective of the layer's activation (SP: gather + scatter)
  // With fewer query groups than TP ranks, the all-gather of the QKV projection's output that lets
  // each rank take its group (Megatron-Core Attention, num_query_groups < tp); 0 otherwise.
  double qkv_gather;
  const MoeHostTime& moe_host;        // moe_layer_host_time(job)
  const DenseHostTime& dense_host;    // dense_layer_host_time(job)
};

// One micro-batch on one GPU as the job's plan and runtime shape it: the layer op graphs' view
// (decoder_layer_ops and the embedding, output and MTP ops).
LayerShape micro_batch_shape(const Job& job);

// One decoder layer of `kind` (MoE or dense MLP, sliding-window or full attention, kept in bf16 or
// at the run's precision): built once per kind of layer and prediction.
LayerCost decoder_layer_cost(const LayerCostInputs& in, LayerKind kind);

}  // namespace strata
