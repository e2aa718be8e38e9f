//===- DType.h - Element types shared by tensors and communication -*- C++ -*-===//
//
// Device-agnostic element types: the communicator takes (pointer, element
// count, DType) so that an NCCL implementation can use the same interface as
// MPI. The numeric values are stable (used by the C ABI).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_DTYPE_H
#define BITPIPE_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace bitpipe::runtime {

enum class DType : int32_t {
  F32 = 0,
  BF16 = 1,
  F16 = 2,
  I32 = 3,
  I64 = 4,
  U8 = 5,
  F64 = 6, // gradient accumulators on the CPU target
};

inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I64:
  case DType::F64:
    return 8;
  case DType::U8:
    return 1;
  }
  return 0;
}

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::U8:
    return "u8";
  case DType::F64:
    return "f64";
  }
  return "?";
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_DTYPE_H
