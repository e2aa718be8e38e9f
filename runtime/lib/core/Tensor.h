//===- Tensor.h - A non-owning view of a dense tensor -----------*- C++ -*-===//
//
// Memory belongs to the arena; a TensorView only names it. Dense, contiguous,
// row-major, shape outermost first (the kernels' convention, runtime.h).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_TENSOR_H
#define BITPIPE_RUNTIME_CORE_TENSOR_H

#include "DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// Elements in a tensor of \p shape; 1 for a scalar (empty shape), -1 if a
/// dimension is negative or the product overflows int64.
int64_t numElements(const std::vector<int64_t> &shape);

/// "[2, 3, 4]", for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numel() const { return numElements(shape); }
  size_t bytes() const {
    return static_cast<size_t>(numel()) * dtypeSize(dtype);
  }
  float *f32() const { return static_cast<float *>(data); }
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_TENSOR_H
