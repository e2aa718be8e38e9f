//===- EagerModulesTest.cpp - The runtime's kernels, loaded at start-up ---===//
//
// Every .cu file of the runtime names its module for loading at start-up
// (cuda/EagerModules.h): a file that forgets would have its kernels loaded
// lazily in a step, where loading may wait for the whole device while a
// peer's NCCL kernel spins. The count is checked without a device; the
// loading itself needs one.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include "cuda/EagerModules.h"

using namespace bitpipe::runtime::test;
namespace cuda = bitpipe::runtime::cuda;

namespace {

// BITPIPE_CUDA_KERNEL_FILES: how many .cu files BitPipeRuntimeCUDA has
// (CMakeLists.txt counts them); each registers one module.
TEST(EagerModules, EveryKernelFileRegistersItsModule) {
  EXPECT_EQ(cuda::registeredModules(), BITPIPE_CUDA_KERNEL_FILES)
      << "a .cu file of runtime/lib/cuda lacks "
         "BITPIPE_CUDA_LOAD_AT_START_UP (or names a second kernel)";
}

using EagerModulesOnDevice = CudaTest;

// bp_cuda_prepare loads every function of every module: at least one per
// module, and as many the second time (nothing was left to load lazily).
TEST_F(EagerModulesOnDevice, PrepareLoadsEveryFunctionOfEveryModule) {
  ASSERT_EQ(bp_cuda_prepare(), BP_OK);
  const int loaded = cuda::eagerlyLoadedFunctions();
  EXPECT_GE(loaded, cuda::registeredModules());
  ASSERT_EQ(bp_cuda_prepare(), BP_OK);
  EXPECT_EQ(cuda::eagerlyLoadedFunctions(), loaded);
}

} // namespace
