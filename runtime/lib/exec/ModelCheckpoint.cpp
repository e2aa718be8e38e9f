//===- ModelCheckpoint.cpp - One checkpoint file for the whole model -*- C++ -*-===//

#include "ModelCheckpoint.h"

#include "train/Safetensors.h"

#include <cstring>

namespace bitpipe::runtime {

std::string manifestFingerprint(const Manifest &manifest) {
  std::vector<CheckpointParam> all;
  for (const ParamSpec &p : manifest.params)
    all.push_back({p.name, p.shape, nullptr, nullptr, nullptr});
  return modelFingerprint(all);
}

Status gatherModelState(Communicator &comm, const Manifest &manifest,
                        ParamStore &store, bool moments,
                        GatheredModel *out) {
  // Each rank sends, for every parameter it is the lowest holder of, in
  // manifest order: weights (and m, v), from the host image of its store.
  Status current = store.toHost();
  if (!current.isOk())
    return current;
  // A sharded optimizer's moments (and master weights, where the target
  // shards them) are whole in the file: the owner gathers its replicas'
  // shards first (every replica joins).
  BP_TRY(store.gatherHostImage(comm, moments));
  std::string mine;
  for (size_t p = 0; p < manifest.params.size(); ++p) {
    if (manifest.ownerRank(static_cast<int>(p)) != comm.rank())
      continue;
    size_t bytes = static_cast<size_t>(manifest.params[p].numel) * sizeof(float);
    for (const float *src :
         {store.hostParam(p), store.hostM(p), store.hostV(p)}) {
      mine.append(reinterpret_cast<const char *>(src), bytes);
      if (!moments)
        break;
    }
  }
  store.releaseHost();
  std::vector<std::string> all;
  Status s = comm.gatherBytes(mine, 0, &all);
  if (!s.isOk() || comm.rank() != 0)
    return s;

  const size_t n = manifest.params.size();
  out->weights.assign(n, {});
  out->m.assign(moments ? n : 0, {});
  out->v.assign(moments ? n : 0, {});
  std::vector<size_t> cursor(all.size(), 0);
  for (size_t p = 0; p < n; ++p) {
    const ParamSpec &spec = manifest.params[p];
    int owner = manifest.ownerRank(static_cast<int>(p));
    if (owner < 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "checkpoint: no rank holds parameter '" +
                               spec.name + "'");
    size_t count = static_cast<size_t>(spec.numel);
    const std::string &from = all[owner];
    std::vector<std::vector<float> *> dsts = {&out->weights[p]};
    if (moments)
      dsts.insert(dsts.end(), {&out->m[p], &out->v[p]});
    for (std::vector<float> *dst : dsts) {
      if (cursor[owner] + count * sizeof(float) > from.size())
        return Status::error(ErrorCode::FormatError,
                             formatString("checkpoint: rank %d sent too few "
                                          "bytes",
                                          owner));
      dst->resize(count);
      std::memcpy(dst->data(), from.data() + cursor[owner],
                  count * sizeof(float));
      cursor[owner] += count * sizeof(float);
    }
  }
  return Status::ok();
}

Status saveModelCheckpoint(Communicator &comm, const Manifest &manifest,
                           ParamStore &store, const std::string &path,
                           const CheckpointInfo &info) {
  GatheredModel model;
  Status s = gatherModelState(comm, manifest, store, /*moments=*/true, &model);
  if (!s.isOk() || comm.rank() != 0)
    return s;
  std::vector<CheckpointParam> params;
  for (size_t p = 0; p < manifest.params.size(); ++p)
    params.push_back({manifest.params[p].name, manifest.params[p].shape,
                      model.weights[p].data(), model.m[p].data(),
                      model.v[p].data()});
  return saveCheckpoint(path, params, info);
}

Status loadModelCheckpoint(const Manifest &manifest, ParamStore &store,
                           const std::string &path, CheckpointInfo *info) {
  return loadCheckpoint(path, store.checkpointParams(),
                        manifestFingerprint(manifest), info);
}

Status dumpRankParams(Communicator &comm, const Manifest &manifest,
                      ParamStore &store, const std::string &path,
                      int64_t step) {
  Status current = store.toHost();
  if (!current.isOk())
    return current;
  // Every weight the rank holds, also where the target keeps only its own
  // parts in fp32.
  BP_TRY(store.gatherHostImage(comm, /*moments=*/false));
  std::vector<SafetensorsTensor> tensors;
  for (int p : store.layoutOrder())
    tensors.push_back({manifest.params[p].name, store.hostParam(p),
                       manifest.params[p].shape});
  Status s =
      writeSafetensors(path, tensors, {{"step", std::to_string(step)}});
  store.releaseHost();
  return s;
}

} // namespace bitpipe::runtime
