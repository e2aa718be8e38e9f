//===- CudnnSdpaPlan.h - A plan for one attention graph ---------*- C++ -*-===//
//
// Turns a CudnnSdpaGraph into a finalized execution plan: asks cuDNN's
// heuristics (mode A, then the fallback list) for engine configurations of
// the graph and keeps the first one whose plan finalizes, i.e. the first
// engine that accepts this shape on this device. Plans are built once per
// shape and direction and cached by CudnnAttention.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAPLAN_H
#define BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAPLAN_H

#include "CudnnSdpaGraph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bitpipe::runtime::cuda::cudnn {

struct SdpaPlan {
  SdpaGraph graph;
  std::vector<Descriptor> configs; // the heuristics' answer, kept alive
  Descriptor plan;
  /// The engine's workspace (after sdpaScratchBytes of the graph's own).
  int64_t workspaceBytes = 0;
};

/// Builds the graph and a plan for it. `handle` is the device's cuDNN
/// handle; without one (a deviceless build), `deviceProp` is a finalized
/// CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR for the heuristics. Returns "" on
/// success, else why no plan exists (the first cuDNN call that failed, or
/// each engine's refusal).
std::string buildSdpaPlan(const SdpaShape &shape, SdpaDirection direction,
                          cudnnHandle_t handle,
                          cudnnBackendDescriptor_t deviceProp, SdpaPlan &out);

/// The graphs' version in the plan cache's keys (CudnnAttention.cpp): a
/// serialized plan holds its graph, so a plan cached for an older graph
/// (other tensors, other uids) must never be loaded for a newer one. Bump
/// it with every change to CudnnSdpaGraph.cpp that changes a graph.
constexpr int kSdpaGraphVersion = 1;

/// cuDNN's JSON of \p plan's execution plan into \p json, which
/// loadSdpaPlan restores without heuristics or run-time compilation (cuDNN
/// serializes its run-time compiled engines, which the fused attention
/// engines are). Returns "" on success, else why not.
std::string serializeSdpaPlan(const SdpaPlan &plan, std::string &json);

/// Builds the graph of \p shape and \p direction (for the variant pack's
/// uids) and restores its plan from \p json, which serializeSdpaPlan made
/// for the same graph, cuDNN and device. Returns "" on success, else why
/// not (the caller then builds the plan afresh).
std::string loadSdpaPlan(const SdpaShape &shape, SdpaDirection direction,
                         cudnnHandle_t handle, const std::string &json,
                         SdpaPlan &out);

/// Forgets the plans this process has made (CudnnAttention.cpp), so that
/// the next use of each shape restores it from the plan cache or builds it
/// again: for the tests of the plan cache.
void forgetPlans();

/// The finalized variant pack of one execution of `graph`: the address of
/// every tensor the graph names (device memory, or host memory for the
/// by-value scalars), looked up by uid in `pointers`, and the engine's
/// workspace (may be null when it needs none). A uid without an address is
/// a failure recorded in `builder`.
Descriptor makeVariantPack(Builder &builder, const SdpaGraph &graph,
                           const std::map<int64_t, void *> &pointers,
                           void *workspace);

} // namespace bitpipe::runtime::cuda::cudnn

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNSDPAPLAN_H
