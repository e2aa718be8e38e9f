//===- HostMemoryTest.cpp - The CPU target's tensor pool at its limits ----===//
//
// The pool (runtime/lib/cpu/HostMemory.cpp) behind the CPU backend's values
// and generated code's memref.alloc: a request it cannot serve is null for
// the runtime (which reports it) and a message and exit for generated code
// (which would not check), never a wrapped size that hands out a tiny block.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>

extern "C" void *_mlir_memref_to_llvm_alloc(size_t bytes);

namespace {

TEST(HostMemory, RequestsBeyondTheMachineAreNull) {
  EXPECT_EQ(bp_alloc(INT64_MAX), nullptr);
  EXPECT_EQ(bp_alloc(-1), nullptr);
  void *p = bp_alloc(100);
  ASSERT_NE(p, nullptr);
  bp_free(p);
}

TEST(HostMemory, GeneratedCodesFailedAllocationStopsWithAMessage) {
  // SIZE_MAX once wrapped to a 64-byte block in the size rounding.
  EXPECT_EXIT(_mlir_memref_to_llvm_alloc(SIZE_MAX),
              ::testing::ExitedWithCode(1),
              "bitpipe: error: out of host memory: a stage function's tensor "
              "of 18446744073709551615 bytes .* could not be allocated");
  EXPECT_EXIT(_mlir_memref_to_llvm_alloc(size_t(1) << 62),
              ::testing::ExitedWithCode(1), "out of host memory");
}

} // namespace
