//===- ModelProfile.cpp - What a model costs, stage by stage --------------===//

#include "bitpipe/Plan/ModelProfile.h"

#include "bitpipe/Schedule/Partition.h"

namespace bitpipe::plan {

sched::Result<std::vector<StageProfile>>
stageProfiles(const ModelProfile &model, int stages) {
  using R = sched::Result<std::vector<StageProfile>>;
  const int units = static_cast<int>(model.layers.size());
  if (stages < 1 || stages > units)
    return R::failure(
        std::to_string(stages) + " stages: the model has " +
        std::to_string(units) +
        " partition units (embedding, layers or their halves, head), and a "
        "stage holds at least one");
  // The partitioner's unit cost (lib/Transforms/Partition.cpp): a stage
  // runs the forward and the backward of every micro-batch.
  std::vector<double> costs;
  for (const LayerProfile &layer : model.layers)
    costs.push_back(layer.forwardFlops + layer.backwardFlops);
  sched::Result<sched::Partition> cut = sched::balancePartition(costs, stages);
  if (!cut)
    return R::failure(cut.error);

  std::vector<StageProfile> out(stages);
  std::vector<int> stageOf(units);
  for (int s = 0; s < stages; ++s) {
    StageProfile &st = out[s];
    st.firstLayer = static_cast<int>(cut->firstLayer(s));
    st.lastLayer = static_cast<int>(cut->lastLayer(s));
    for (int u = st.firstLayer; u <= st.lastLayer; ++u) {
      const LayerProfile &layer = model.layers[u];
      stageOf[u] = s;
      st.forwardFlops += layer.forwardFlops;
      st.backwardFlops += layer.backwardFlops;
      st.parameters += layer.parameters;
      st.activationBytes += layer.activationBytes;
      st.statisticBytes += layer.statisticBytes;
      st.statisticFlops += layer.statisticFlops;
      st.work.add(layer.work);
    }
  }
  for (const CrossingValue &v : model.crossings)
    if (v.defLayer >= 0 && v.lastUseLayer < units &&
        stageOf[v.lastUseLayer] != stageOf[v.defLayer])
      out[stageOf[v.defLayer]].boundaryBytes += v.bytes;
  return R::success(std::move(out));
}

} // namespace bitpipe::plan
