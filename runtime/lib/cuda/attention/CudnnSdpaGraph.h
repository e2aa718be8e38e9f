//===- CudnnSdpaGraph.h - cuDNN graphs of fused attention -------*- C++ -*-===//
//
// The forward and backward of scaled-dot-product attention on the fused
// qkv layout of bp_attention_* (bitpipe/runtime.h), written as cuDNN 9
// backend operation graphs that cuDNN's fused flash-attention engines
// recognise and run as one kernel (the T x T scores are virtual tensors:
// they are never stored).
//
// Which graph. cuDNN 9 has two ways to ask for attention: a single
// CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD node, and a pattern of matmul,
// pointwise and reduction nodes that the engines match. The single node
// only gained masks (a score-modifier subgraph) in 9.21, and its backward
// node is not used by NVIDIA's own frontend even there, so on the 9.19 that
// both machines have, causal attention needs the pattern. These graphs
// follow the pattern cudnn-frontend emits for its composite SDPA nodes
// (bf16 I/O, fp32 intermediates and compute, no dropout, no bias, top-left
// causal mask); the engines match on exactly that shape of graph.
//
// Layout without copies: every head of q, k and v is read in place from
// qkv [B, T, 3H] by strides, as dims [B, nh, T, d] with strides
// [T*3H, d, 3H, 1] at qkv (q), qkv + H (k), qkv + 2H (v); k and v enter the
// matmuls transposed ([B, nh, d, T], strides [T*3H, d, 1, 3H]) because the
// backend's matmul multiplies [.., M, K] by [.., K, N]. out, dout are
// [B, nh, T, d] with strides [T*H, d, H, 1]; dq, dk, dv are written in
// place into dqkv like q, k, v. lse is stats [B, nh, T, 1] fp32.
//
// stats = max_j s_ij + log sum_j exp(s_ij - max_j s_ij) with s the scaled,
// masked scores: the natural-log log-sum-exp that runtime.h calls lse, so
// the CPU and the cuDNN paths exchange lse unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAGRAPH_H
#define BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAGRAPH_H

#include "CudnnBackend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime::cuda::cudnn {

/// One attention call's geometry.
struct SdpaShape {
  int64_t B, T, H, nh;
  bool causal;
  int64_t d() const { return H / nh; }
  /// "B=.. T=.. H=.. nh=.. causal|bidirectional", for messages.
  std::string describe() const;
};

enum class SdpaDirection { Forward, Backward };

const char *directionName(SdpaDirection direction);

/// Unique ids of the graphs' non-virtual tensors: the keys of the variant
/// pack. Scalars (scale, -inf, 1) are passed by value from host memory;
/// softmax sum and the fp32 dq accumulator live in the workspace.
enum SdpaUid : int64_t {
  kUidQ = 1,
  kUidK = 2, // transposed view [B, nh, d, T]
  kUidV = 3, // [B, nh, T, d] forward; transposed [B, nh, d, T] backward
  kUidO = 4,
  kUidStats = 5,
  kUidScale = 6,
  kUidNegInf = 7, // causal graphs only
  kUidDO = 8,
  kUidDQ = 9,
  kUidDK = 10,
  kUidDV = 11,
  kUidOne = 12,
  kUidSoftmaxSum = 13, // backward: rowsum(dO * O), fp32 [B, nh, T, 1]
  kUidDQAccum = 14,    // backward: dq in fp32 [B, nh, T, d], then rounded
};

/// A finalized operation graph and every descriptor it refers to (kept
/// alive with it).
struct SdpaGraph {
  std::vector<Descriptor> tensors;
  std::vector<Descriptor> parts; // pointwise/matmul/reduction descriptors
  std::vector<Descriptor> operations;
  Descriptor graph;
  /// The uids of the variant pack this graph needs, in no particular order.
  std::vector<int64_t> uids;
};

/// Builds and finalizes the graph of `direction` for `shape`. `handle` may
/// be null (a deviceless build, for tests; cuDNN 9.19 takes the device
/// from the heuristics' device properties then). Returns false with
/// builder.failure() set if cuDNN rejected a descriptor.
bool buildSdpaGraph(Builder &builder, const SdpaShape &shape,
                    SdpaDirection direction, cudnnHandle_t handle,
                    SdpaGraph &out);

/// Bytes of the backward's own fp32 buffers in front of the engine's
/// workspace (softmax sum, dq accumulator), each 256-byte aligned; 0 for
/// the forward.
int64_t sdpaScratchBytes(const SdpaShape &shape, SdpaDirection direction);
/// Offset of the dq accumulator in that scratch.
int64_t sdpaDQAccumOffset(const SdpaShape &shape);

} // namespace bitpipe::runtime::cuda::cudnn

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAGRAPH_H
