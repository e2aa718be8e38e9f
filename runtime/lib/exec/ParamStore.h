//===- ParamStore.h - One rank's parameters, gradients, moments -*- C++ -*-===//
//
// The fp32 master weights of the parameters a rank holds (on the CPU target
// they are the parameters the stage functions read), their gradient
// accumulators and AdamW's two moments: four arrays with one layout.
//
// The layout is DDP's bucket views: the parameters of the rank's all-reduce
// buckets come first, bucket after bucket in the manifest's bucket order,
// each bucket's parameters in its listed order; the parameters in no bucket
// follow in the rank's order. A bucket's gradients are then one contiguous
// range, and its all-reduce runs in place on it with no packing. Replicas
// list the same buckets in the same order (Manifest checks it), so the
// ranges line up element by element across the group.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_PARAMSTORE_H
#define BITPIPE_RUNTIME_EXEC_PARAMSTORE_H

#include "Manifest.h"
#include "train/AdamW.h"
#include "train/Checkpoint.h"

#include <cstdint>
#include <vector>

namespace bitpipe::runtime {

/// A contiguous range of the rank's arrays, in elements.
struct ElementRange {
  int64_t offset = 0;
  int64_t count = 0;
};

class ParamStore {
public:
  ParamStore(const Manifest &manifest, int rank);

  /// Manifest indices of the parameters held, in layout order.
  const std::vector<int> &layoutOrder() const { return order_; }
  bool holds(int param) const { return offset_[param] >= 0; }

  /// The arrays of parameter \p param (a manifest index; must be held).
  float *param(int param) { return params_.data() + offset_[param]; }
  double *grad(int param) { return grads_.data() + offset_[param]; }
  float *m(int param) { return m_.data() + offset_[param]; }
  float *v(int param) { return v_.data() + offset_[param]; }

  /// The gradient (or parameter) range of the rank's bucket \p bucket.
  const ElementRange &bucketRange(int bucket) const { return buckets_[bucket]; }
  float *paramsData() { return params_.data(); }
  double *gradsData() { return grads_.data(); }
  int64_t numFloats() const { return static_cast<int64_t>(params_.size()); }

  /// Initial values from \p seed: each parameter by its manifest init,
  /// drawn by name (Init.h), so every replica starts identical.
  void initialize(uint64_t seed);

  /// AdamW's view of the held parameters (layout order).
  std::vector<AdamWParam> adamParams();
  /// Checkpoint view of the held parameters (layout order).
  std::vector<CheckpointParam> checkpointParams();

  void zeroGradients();

private:
  const Manifest &manifest_;
  std::vector<int> order_;
  std::vector<int64_t> offset_; // by manifest index; -1 if not held
  std::vector<ElementRange> buckets_;
  std::vector<float> params_, m_, v_;
  // Float64 accumulators: see AdamWParam.
  std::vector<double> grads_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_PARAMSTORE_H
