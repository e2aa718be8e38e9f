//===- GraphFootprint.cpp - The memory a captured step's graph uses -------===//

#include "GraphFootprint.h"

#include "core/Status.h"

#include <map>

namespace bitpipe::runtime {

PoolView::~PoolView() = default;

GraphFootprint::GraphFootprint(const std::vector<PoolBlock> &heldAtStart,
                               const std::vector<PoolBlock> &handedOut,
                               const std::vector<PoolBlock> &heldAtEnd) {
  // By address: a block handed out several times in the capture is one
  // block of the footprint, its last hand-out the one that may live on.
  std::map<uintptr_t, PoolBlock> all;
  for (const PoolBlock &b : heldAtStart)
    all[b.address] = b;
  for (const PoolBlock &b : handedOut)
    all[b.address] = b;
  std::map<uintptr_t, uint64_t> atEnd;
  for (const PoolBlock &b : heldAtEnd)
    atEnd[b.address] = b.serial;
  for (const auto &[address, b] : all) {
    auto it = atEnd.find(address);
    if (it != atEnd.end() && it->second == b.serial)
      kept_.push_back(b);
    else
      scratch_.push_back(b);
  }
}

static std::string describe(const char *what, const PoolBlock &b) {
  return formatString("%s block of %lld bytes at 0x%llx", what,
                      static_cast<long long>(b.bytes),
                      static_cast<unsigned long long>(b.address));
}

std::string GraphFootprint::check(const PoolView &pool) const {
  for (const PoolBlock &b : kept_) {
    uint64_t serial = 0;
    switch (pool.state(b.address, b.bytes, &serial)) {
    case PoolRangeState::Absent:
      return describe("a kept", b) + " went back to CUDA";
    case PoolRangeState::Free:
      return describe("a kept", b) + " was freed by its owner";
    case PoolRangeState::Held:
      if (serial != b.serial)
        return describe("a kept", b) +
               " was freed and is held by another owner now";
      break;
    }
  }
  for (const PoolBlock &b : scratch_) {
    uint64_t serial = 0;
    switch (pool.state(b.address, b.bytes, &serial)) {
    case PoolRangeState::Absent:
      return describe("a scratch", b) + " went back to CUDA";
    case PoolRangeState::Held:
      return describe("a scratch", b) + " is held by another owner now";
    case PoolRangeState::Free:
      break;
    }
  }
  return "";
}

} // namespace bitpipe::runtime
