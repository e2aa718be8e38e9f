//===- device-probe.cpp - Is there a usable CUDA device here? -------------===//
//
//   bitpipe-gpu-probe
//
// Prints one line about device 0 (name, compute capability, memory) and
// exits 0 when the CUDA runtime can use it; else prints why not and exits 1.
// The GPU checks (test/EndToEnd/cuda-match.sh, bench/gpu/check.sh) ask this
// first, so that a machine without a GPU skips them with the reason, by the
// same test the kernel tests use (runtime/unittests/cuda/CudaTestUtil.h):
// cudaGetDeviceCount.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <cstdio>

int main() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    std::printf("no usable CUDA device: cudaGetDeviceCount failed (%s: %s)\n",
                cudaGetErrorName(err), cudaGetErrorString(err));
    return 1;
  }
  if (count == 0) {
    std::printf("no CUDA device: cudaGetDeviceCount returned 0\n");
    return 1;
  }
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    std::printf("no usable CUDA device: cudaGetDeviceProperties failed (%s: "
                "%s)\n",
                cudaGetErrorName(err), cudaGetErrorString(err));
    return 1;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("%s, sm_%d%d, %d SMs, %.1f GiB; driver CUDA %d.%d, runtime "
              "%d.%d\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.totalGlobalMem / 1073741824.0, driver / 1000,
              driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  return 0;
}
