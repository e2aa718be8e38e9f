//===- InputStaging.cpp - Where a device target stages a step's inputs ----===//

#include "InputStaging.h"

#include "core/Dropout.h"

#include <algorithm>

namespace bitpipe::runtime {

namespace {

size_t aligned(size_t bytes) {
  return (bytes + InputStaging::kAlignment - 1) / InputStaging::kAlignment *
         InputStaging::kAlignment;
}

} // namespace

size_t InputStaging::capacityFor(const Manifest &manifest) {
  const size_t perInput = aligned(
      static_cast<size_t>(std::max<int64_t>(manifest.model.microbatchSize, 1)) *
      static_cast<size_t>(std::max<int64_t>(manifest.model.seqLen, 1)) *
      sizeof(int32_t));
  // Each forward loads its inputs for each micro-batch it runs: one key per
  // dropout_key argument of every forward function bounds what any rank
  // loads (a rank runs some of the stages).
  size_t keys = 0;
  for (const StageFunction &f : manifest.functions)
    if (f.kind == FunctionKind::Forward)
      for (const Role &r : f.args)
        keys += r.kind == RoleKind::Input && r.input == InputKind::DropoutKey;
  const size_t perMicroBatch =
      2 * perInput + keys * aligned(kDropoutKeyWords * sizeof(int32_t));
  const size_t microbatches =
      static_cast<size_t>(std::max<int64_t>(manifest.schedule.microbatches, 1));
  return perMicroBatch * microbatches;
}

Expected<size_t> InputStaging::take(size_t bytes) {
  const size_t need = aligned(bytes);
  if (need > capacity_ - used_)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("an input of %zu bytes does not fit the %zu bytes of "
                     "pinned input staging left of %zu (sized at start-up "
                     "from the manifest: two id inputs and every stage's "
                     "dropout keys per micro-batch): the program loads "
                     "more inputs in a step than its manifest allows",
                     bytes, capacity_ - used_, capacity_));
  const size_t at = used_;
  used_ += need;
  return at;
}

} // namespace bitpipe::runtime
