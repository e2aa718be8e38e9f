//===- CudnnSdpaPlan.cpp - An execution plan for one attention graph -----===//
//
// See CudnnSdpaPlan.h. The heuristics return engine configurations already
// finalized; an execution plan is then made of one configuration and
// finalized, which is where an engine that cannot run the graph (this
// shape, this device, a missing runtime-compilation library) says no.
//
//===----------------------------------------------------------------------===//

#include "CudnnSdpaPlan.h"

#include <algorithm>

namespace bitpipe::runtime::cuda::cudnn {

namespace {

/// The configurations heuristics mode `mode` proposes for `graph`, best
/// first; empty (with builder's failure set) if the query itself failed.
std::vector<Descriptor> proposeConfigs(Builder &b, const Descriptor &graph,
                                       cudnnBackendHeurMode_t mode,
                                       cudnnBackendDescriptor_t deviceProp) {
  std::vector<Descriptor> configs;
  Descriptor heur =
      b.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
  b.setDescriptor(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.get(),
                  "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH");
  b.setHeurMode(heur, CUDNN_ATTR_ENGINEHEUR_MODE, mode,
                "CUDNN_ATTR_ENGINEHEUR_MODE");
  if (deviceProp)
    b.setDescriptor(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, deviceProp,
                    "CUDNN_ATTR_ENGINEHEUR_DEVICEPROP");
  b.finalize(heur, "engine heuristics");
  if (!b.ok())
    return configs;

  // How many, then that many caller-created (unfinalized) ENGINECFG
  // descriptors for cuDNN to fill.
  int64_t count = 0;
  if (!b.check(cudnnBackendGetAttribute(heur.get(),
                                        CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                        &count, nullptr),
               "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS count)"))
    return configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(
        b.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
    raw.push_back(configs.back().get());
  }
  if (!b.ok() || count == 0)
    return {};
  int64_t returned = 0;
  if (!b.check(cudnnBackendGetAttribute(heur.get(),
                                        CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                        &returned, raw.data()),
               "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"))
    return {};
  configs.resize(static_cast<size_t>(std::min(returned, count)));
  return configs;
}

/// A finalized plan for `config`, or an empty one with `why` set.
Descriptor makePlan(const Descriptor &config, int64_t &workspaceBytes,
                    std::string &why) {
  Builder b;
  Descriptor plan =
      b.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
  // No CUDNN_ATTR_EXECUTION_PLAN_HANDLE: deprecated in 9.x, the plan takes
  // the operation graph's, and cudnn-frontend sets it only to deserialize.
  b.setDescriptor(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config.get(),
                  "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG");
  b.finalize(plan, "execution plan");
  workspaceBytes = b.getInt64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                              "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
  if (!b.ok()) {
    why = b.failure();
    return Descriptor();
  }
  return plan;
}

} // namespace

std::string buildSdpaPlan(const SdpaShape &shape, SdpaDirection direction,
                          cudnnHandle_t handle,
                          cudnnBackendDescriptor_t deviceProp, SdpaPlan &out) {
  out = SdpaPlan();
  Builder b;
  if (!buildSdpaGraph(b, shape, direction, handle, out.graph))
    return b.failure();

  // Each refused engine says why; the first few are enough to act on.
  std::string refusals;
  int refused = 0;
  auto note = [&](const std::string &why) {
    if (++refused <= 3)
      refusals += (refusals.empty() ? "" : "; ") + why;
  };
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Builder query;
    std::vector<Descriptor> configs =
        proposeConfigs(query, out.graph.graph, mode, deviceProp);
    if (!query.ok()) {
      note(query.failure());
      continue;
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      std::string why;
      int64_t workspace = 0;
      Descriptor plan = makePlan(configs[i], workspace, why);
      if (!plan) {
        note(why);
        continue;
      }
      out.plan = std::move(plan);
      out.workspaceBytes = workspace;
      out.configs = std::move(configs);
      return "";
    }
  }
  if (refused == 0)
    refusals = "the heuristics proposed no engine for this graph";
  else if (refused > 3)
    refusals += "; and " + std::to_string(refused - 3) + " more";
  return "no cuDNN engine runs this graph: " + refusals;
}

std::string serializeSdpaPlan(const SdpaPlan &plan, std::string &json) {
  Builder b;
  json = b.getChars(plan.plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                    "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION");
  if (!b.ok())
    return b.failure();
  if (json.empty())
    return "cuDNN gave an empty JSON representation of the plan";
  return "";
}

std::string loadSdpaPlan(const SdpaShape &shape, SdpaDirection direction,
                         cudnnHandle_t handle, const std::string &json,
                         SdpaPlan &out) {
  out = SdpaPlan();
  Builder b;
  if (!buildSdpaGraph(b, shape, direction, handle, out.graph))
    return b.failure();
  Descriptor plan =
      b.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
  // A restored plan has no operation graph to take the handle from: it is
  // given here, the one use left of this deprecated attribute.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  b.setHandle(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle,
              "CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
#pragma GCC diagnostic pop
  b.setChars(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, json,
             "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION");
  b.finalize(plan, "execution plan (from its JSON)");
  const int64_t workspace =
      b.getInt64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                 "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
  if (!b.ok())
    return b.failure();
  out.plan = std::move(plan);
  out.workspaceBytes = workspace;
  return "";
}

} // namespace bitpipe::runtime::cuda::cudnn

namespace bitpipe::runtime::cuda::cudnn {

Descriptor makeVariantPack(Builder &builder, const SdpaGraph &graph,
                           const std::map<int64_t, void *> &pointers,
                           void *workspace) {
  std::vector<int64_t> uids;
  std::vector<void *> addresses;
  for (int64_t uid : graph.uids) {
    auto it = pointers.find(uid);
    if (it == pointers.end() || !it->second) {
      builder.check(CUDNN_STATUS_BAD_PARAM,
                    "variant pack: no address for tensor uid " +
                        std::to_string(uid));
      return Descriptor();
    }
    uids.push_back(uid);
    addresses.push_back(it->second);
  }
  Descriptor pack =
      builder.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  builder.setInt64s(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids,
                    "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS");
  builder.setPointers(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, addresses,
                      "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS");
  builder.setPointer(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, workspace,
                     "CUDNN_ATTR_VARIANT_PACK_WORKSPACE");
  builder.finalize(pack, "variant pack");
  return builder.ok() ? std::move(pack) : Descriptor();
}

} // namespace bitpipe::runtime::cuda::cudnn
