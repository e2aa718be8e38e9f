//===- Arena.h - Per-rank arena with named bump regions ---------*- C++ -*-===//
//
// One aligned allocation per rank, made once at start-up and sized from the
// numbers the compiler computes (parameter bytes, peak in-flight activation
// bytes). It is cut into named regions; each region is a bump allocator:
//
//   - Persistent regions (parameters, gradients, optimizer state) are filled
//     once and never reset.
//   - PerStep regions (activations) are reset at the start of every step, so
//     their capacity is the schedule's peak in-flight activation memory.
//
// Why not malloc per tensor: the schedule knows the peak exactly, so a
// too-small budget is found at the first step with a message that says
// which region and by how much, instead of an OOM somewhere later; and no
// allocator runs on the training hot path.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_ARENA_H
#define BITPIPE_RUNTIME_CORE_ARENA_H

#include "Status.h"
#include "Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bitpipe::runtime {

enum class RegionLifetime { Persistent, PerStep };

struct RegionSpec {
  std::string name;
  uint64_t bytes = 0;
  RegionLifetime lifetime = RegionLifetime::Persistent;
};

using RegionId = int32_t;

class Arena {
public:
  /// Every allocation starts on this boundary (a cache line; enough for
  /// AVX-512 loads and for cuBLAS).
  static constexpr uint64_t kAlignment = 64;

  /// Reserves the sum of the regions' sizes (each rounded up to kAlignment)
  /// in one allocation. Fails if a name repeats or the memory is not there.
  static Expected<std::unique_ptr<Arena>>
  create(const std::vector<RegionSpec> &regions);

  ~Arena();
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// The id of region \p name, or -1.
  RegionId findRegion(const std::string &name) const;

  /// \p bytes from region \p region, aligned to kAlignment. \p what names the
  /// tensor in the error message when the region is exhausted.
  Expected<void *> allocate(RegionId region, uint64_t bytes,
                            const std::string &what);

  /// A tensor of \p dtype and \p shape from region \p region.
  Expected<TensorView> allocateTensor(RegionId region, const std::string &name,
                                      DType dtype,
                                      const std::vector<int64_t> &shape);

  /// Forgets every allocation of the PerStep regions (the start of a step).
  /// Persistent regions are untouched.
  void resetStep();

  uint64_t capacity(RegionId region) const;
  uint64_t used(RegionId region) const;
  /// The most \p region has ever held (across steps), to compare against the
  /// compiler's estimate.
  uint64_t peak(RegionId region) const;
  const std::string &regionName(RegionId region) const;
  size_t numRegions() const { return regions_.size(); }

private:
  struct Region {
    RegionSpec spec;
    uint64_t begin = 0;    // offset of the region in the block
    uint64_t capacity = 0; // spec.bytes rounded up to kAlignment
    uint64_t used = 0;
    uint64_t peak = 0;
  };

  Arena() = default;

  char *base_ = nullptr;
  uint64_t total_ = 0;
  std::vector<Region> regions_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_ARENA_H
